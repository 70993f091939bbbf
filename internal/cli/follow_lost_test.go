package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLogsFollowGoesOnPastALostLog: the Ray head restarts under a running attempt; its job is gone, the attempt
// ends INFRA and the task runs again. The follower, which had read Ray's stream past mvp's last copy, gets an answer
// that ends cut-short ("what its driver wrote after that copy is lost"). `mvp logs -f` exited 1 there and did not
// follow attempt 2, though specs/api.md says it follows the task to its end: it says the loss on stderr and goes
// on; it fails with it only when the task ends with that attempt.
func TestLogsFollowGoesOnPastALostLog(t *testing.T) {
	const id = "mvp2-sft-20251223-143201-7f3a"
	defer func(p time.Duration) { followPoll = p }(followPoll)
	followPoll = 10 * time.Millisecond
	const ended1 = `{"attempt_no": 1, "ray_status": "FAILED", "failure_kind": "INFRA", "end_time": "2025-12-23T14:33:01Z"}`
	for _, c := range []string{"requeued", "failed", "canceled-while-waiting"} {
		requeued := c == "requeued"
		gets := 0
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			defer mu.Unlock()
			switch r.URL.Path {
			case "/api/v2/tasks/" + id + "/logs":
				switch r.URL.Query().Get("attempt") {
				case "":
					w.Header().Set("X-Mvp-Log-Attempt", "1")
					w.Header().Set("Trailer", "X-Mvp-Log-End, X-Mvp-Log-Why")
					io.WriteString(w, "attempt one: step 1\n")
					w.Header().Set("X-Mvp-Log-End", "cut-short")
					w.Header().Set("X-Mvp-Log-Why", "attempt 1 ended (INFRA) and Ray no longer has its job: what its driver wrote after that copy is lost")
				case "2":
					io.WriteString(w, "attempt two: done\n")
				default:
					http.NotFound(w, r)
				}
			case "/api/v2/tasks/" + id:
				w.Header().Set("Content-Type", "application/json")
				gets++
				if c == "canceled-while-waiting" && gets <= 2 { // to run again (the command looks first, then followOn): the loss is said; then canceled
					io.WriteString(w, `{"task_id": "`+id+`", "state": "PENDING_RESOURCES", "latest_attempt_no": 1, "attempts": [`+ended1+`]}`)
					return
				}
				if c == "canceled-while-waiting" {
					io.WriteString(w, `{"task_id": "`+id+`", "state": "CANCELED", "latest_attempt_no": 1, "attempts": [`+ended1+`]}`)
					return
				}
				if requeued {
					io.WriteString(w, `{"task_id": "`+id+`", "state": "SUCCEEDED", "latest_attempt_no": 2, "attempts": [`+ended1+
						`, {"attempt_no": 2, "ray_status": "SUCCEEDED", "end_time": "2025-12-23T14:40:01Z"}]}`)
				} else {
					io.WriteString(w, `{"task_id": "`+id+`", "state": "FAILED", "latest_attempt_no": 1, "attempts": [`+ended1+`]}`)
				}
			default:
				http.NotFound(w, r)
			}
		}))
		out, errb, env := serverEnv(srv.URL)
		code := Run(context.Background(), []string{"logs", "-f", id}, env)
		srv.Close()
		if !strings.Contains(errb.String(), "lost") {
			t.Errorf("%s: stderr %q does not say that attempt 1's log is lost", c, errb.String())
		}
		if requeued && (code != 0 || !strings.Contains(out.String(), "attempt two: done")) {
			t.Errorf("exit %d, stdout %q, stderr %q: want attempt 1's log, the loss said, then attempt 2's to the task's end",
				code, out.String(), errb.String())
		}
		if !requeued && code == 0 {
			t.Errorf("%s: the task ended with the attempt whose log is lost, and mvp logs -f exited 0 (stderr %q)", c, errb.String())
		}
		if n := strings.Count(errb.String(), "what its driver wrote after that copy is lost"); n != 1 {
			t.Errorf("%s: the loss is said %d times on stderr, want once:\n%s", c, n, errb.String())
		}
	}
}
