// codes.js: the close codes of the server's sockets that mean "do not
// come back": a permanent refusal, which retrying cannot help. They are the
// server's own (feeds.CloseFeedGone, rooms.CloseGone, rooms.CloseFull);
// any other close (a restart, a network that dropped) is reconnected.

// FEED_GONE: a feed socket whose feed was let go (its room expired).
export const FEED_GONE = 4404;
// ROOM_GONE: a room's socket, or its feed's, when the room expired.
export const ROOM_GONE = 4410;
// ROOM_FULL: the room holds as many readers as it may.
export const ROOM_FULL = 4429;
