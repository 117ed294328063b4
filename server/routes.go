package server

// Every route of the site is listed here, and only here.
//
// Reading pages (reading.go):
//   GET /                         redirect to /k8s/{DefaultTag}/
//   GET /k8s/{tag}/               the annotated syncLoopIteration
//   GET /k8s/{tag}/pod-workers    pod_workers.go type comments
//   GET /k8s/{tag}/reading.json   the Reading
//   GET /k8s/{tag}/worksheet.md   the worksheet
//   GET /static/*                 embedded CSS, JS, chroma stylesheet
// Live feed (live.go):
//   GET /feeds/{feed}/ws          browser websocket: history then live tail
//   GET /feeds/{feed}/ingest      relay websocket, bearer token
//   GET /metrics, GET /healthz
