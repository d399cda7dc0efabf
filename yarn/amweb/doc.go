// Package amweb is the ApplicationMaster's tracking server: the page and
// GET /api/status (a page of amstatus.Status), GET /api/workers (the worker
// count a worker reads), POST /api/report (the launchers' signed device
// reports), GET /api/rendezvous, and the rule that serves them through the
// RM's web proxy (WebProxy). It knows the allocate loop only as a
// StatusSource (with Pager and RendezvousSource when it offers them).
package amweb
