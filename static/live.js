// Placeholder: the live pane (owned by the live feed work) replaces this file.
