package amweb

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/xres/xres/resources/contract"
	"github.com/xres/xres/yarn/amstatus"
)

// RendezvousSource is a StatusSource that answers launchers' rendezvous
// (the AM).
type RendezvousSource interface {
	Rendezvous(container string) (contract.Rendezvous, error)
}

// handleRendezvous serves GET /api/rendezvous?container=ID when src
// answers it: read-only, what the container's launcher waits for (the
// reports that change the AM's state go through POST /api/report). Only
// the container's own launcher may ask (it learns its peers' addresses):
// signed with its key over RendezvousMessage, with a nonce; the answer is
// signed with the same key over the nonce and the body.
func handleRendezvous(mux *http.ServeMux, src StatusSource, secret []byte, refusals *refusalLog) {
	rs, ok := src.(RendezvousSource)
	if !ok {
		return
	}
	mux.HandleFunc("GET "+contract.RendezvousPath, func(w http.ResponseWriter, r *http.Request) {
		id, ok := signedGet(w, r, secret, contract.RendezvousMessage, refusals)
		if !ok {
			return
		}
		ans, err := rs.Rendezvous(id)
		if err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, amstatus.ErrUnknownContainer) {
				code = http.StatusNotFound
			}
			http.Error(w, err.Error(), code)
			return
		}
		body, err := json.Marshal(ans)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeAnswer(w, secret, contract.AnswerRendezvous, id, r.Header.Get(contract.HeaderNonce), append(body, '\n'))
	})
}
