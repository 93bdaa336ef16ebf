package http

import (
	"errors"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/fault"
	"github.com/reinhq/rein/server/workflowtool"
	"github.com/reinhq/rein/store"
)

// Artifact lists are what GET /v1/runs/{id}/artifacts answers: the
// outputs of the run's steps (by step id; workflowtool.ListArtifacts) and
// the delivery files prepared for it.
type artifactList struct {
	Steps      []workflowtool.Artifact `json:"steps"`
	Deliveries []string                `json:"deliveries"`
}

func (s *Server) artifacts(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	steps, err := workflowtool.ListArtifacts(r.Context(), s.c.Store(), run.ID)
	if err != nil {
		writeProblem(w, err)
		return
	}
	out := artifactList{Steps: steps, Deliveries: []string{}}
	if out.Steps == nil {
		out.Steps = []workflowtool.Artifact{}
	}
	if root := s.deliveryRoot(run); root != nil {
		defer root.Close()
		if entries, err := fs.ReadDir(root.FS(), "."); err == nil {
			for _, e := range entries {
				if e.Type().IsRegular() {
					out.Deliveries = append(out.Deliveries, e.Name())
				}
			}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// deliveryRoot opens the run's delivery folder — <DeliveryDir>/<run>, or
// by default <its served flow's folder>/deliveries/<run>, where the
// workflow tool writes them — or returns nil.
func (s *Server) deliveryRoot(run *store.Run) *os.Root {
	dir := s.o.DeliveryDir
	if dir == "" {
		p := s.flows.projects[run.Flow]
		if p == nil || p.Dir == "" {
			return nil
		}
		dir = filepath.Join(p.Dir, "deliveries")
	}
	root, err := os.OpenRoot(filepath.Join(dir, run.ID))
	if err != nil {
		return nil
	}
	return root
}

// artifact answers one artifact: a step's output (JSON), or a delivery
// file, read through an os.Root of the run's delivery folder, so no name
// (a .., a link) reaches outside it.
func (s *Server) artifact(w http.ResponseWriter, r *http.Request) {
	run, err := s.run(r)
	if err != nil {
		writeProblem(w, err)
		return
	}
	name := r.PathValue("name")
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		writeProblem(w, requestErr("", "artifact name %q: give a step id or a delivery file's name, without a path", name))
		return
	}
	steps, err := workflowtool.ListArtifacts(r.Context(), s.c.Store(), run.ID)
	if err != nil {
		writeProblem(w, err)
		return
	}
	for _, a := range steps {
		if a.StepID == name {
			writeJSON(w, http.StatusOK, a)
			return
		}
	}
	root := s.deliveryRoot(run)
	if root == nil {
		writeProblem(w, notFound("run "+run.ID+" has no artifact "+name))
		return
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			writeProblem(w, notFound("run "+run.ID+" has no artifact "+name))
			return
		}
		writeProblem(w, statusErr(http.StatusBadRequest, fault.Format, "artifact %s of run %s: %v", name, run.ID, err))
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		writeProblem(w, notFound("run "+run.ID+" has no artifact "+name))
		return
	}
	ct := mime.TypeByExtension(filepath.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	_, _ = io.Copy(w, f)
}
