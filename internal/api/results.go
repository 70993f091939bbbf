package api

import (
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
)

// resultTypes are the content types of the files training runs commonly leave, before the system's table (which
// differs between machines) is asked.
var resultTypes = map[string]string{
	".json":        "application/json",
	".jsonl":       "application/jsonl",
	".txt":         "text/plain; charset=utf-8",
	".log":         "text/plain; charset=utf-8",
	".md":          "text/markdown; charset=utf-8",
	".csv":         "text/csv; charset=utf-8",
	".yaml":        "application/yaml",
	".yml":         "application/yaml",
	".parquet":     "application/vnd.apache.parquet",
	".safetensors": "application/octet-stream",
	".pt":          "application/octet-stream",
	".bin":         "application/octet-stream",
	".png":         "image/png",
	".html":        "text/html; charset=utf-8",
}

// ResultContentType is the content type a result file is served with, by its extension; unknown extensions are
// application/octet-stream.
func ResultContentType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ct, ok := resultTypes[ext]; ok {
		return ct
	}
	if ct := mime.TypeByExtension(ext); ct != "" {
		return ct
	}
	return "application/octet-stream"
}

// taskResults lists the files under the task's results folder.
func (s *Server) taskResults(w http.ResponseWriter, r *http.Request) error {
	t, err := s.task(r)
	if err != nil {
		return err
	}
	files, truncated, skipped, err := s.Files.ListResults(t.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"task_id": t.ID, "files": files, "truncated": truncated,
		"skipped": skipped})
	return nil
}

// taskResultFile serves one result file, with range requests and conditional GETs (http.ServeContent). The file
// is served as data: the browser is told not to sniff it or run it.
func (s *Server) taskResultFile(w http.ResponseWriter, r *http.Request) error {
	t, err := s.task(r)
	if err != nil {
		return err
	}
	rel := r.PathValue("path")
	fh, fi, err := s.Files.OpenResult(t.ID, rel)
	if err != nil {
		return err
	}
	defer fh.Close()
	ct := ResultContentType(rel)
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	if strings.HasPrefix(ct, "text/html") || strings.Contains(ct, "svg") || strings.Contains(ct, "xml") {
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", path.Base(rel)))
	}
	http.ServeContent(w, r, path.Base(rel), fi.ModTime(), fh)
	return nil
}
