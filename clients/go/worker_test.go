package jobclock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeJobclock is the worker protocol in memory: leases (with wait and next), heartbeats,
// reports and give-backs, enough to see what the Worker sends and when.
type fakeJobclock struct {
	t           *testing.T
	mu          sync.Mutex
	queue       []string
	leased      map[string]string // id -> lease token
	deadline    map[string]time.Time
	cancelled   map[string]bool
	reports     map[string][]map[string]any
	beats       map[string]int
	beatTimes   map[string][]time.Time
	released    []string
	releasedAs  map[string]map[string]any // id -> the give-back's body
	tokens      int
	leaseCalls  int
	reportCalls int
	nextAsked   int
	refuseFinal bool
	// fault answers a request instead of the fake when it returns true (503s, cut connections)
	fault func(w http.ResponseWriter, r *http.Request, kind string, n int) bool
	srv   *httptest.Server
}

func newFake(t *testing.T) *fakeJobclock {
	f := &fakeJobclock{t: t, leased: map[string]string{}, deadline: map[string]time.Time{}, cancelled: map[string]bool{},
		reports: map[string][]map[string]any{}, beats: map[string]int{}, beatTimes: map[string][]time.Time{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeJobclock) add(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for i := 0; i < n; i++ {
		id := strconv.FormatInt(idSeq.Add(1), 10)
		ids = append(ids, id)
		f.queue = append(f.queue, id)
	}
	return ids
}

// idSeq numbers jobs across the tests' fakes.
var idSeq atomic.Int64

func (f *fakeJobclock) take(limit int) []map[string]any {
	var jobs []map[string]any
	for len(jobs) < limit && len(f.queue) > 0 {
		id := f.queue[0]
		f.queue = f.queue[1:]
		f.tokens++
		token := fmt.Sprintf("tok-%d", f.tokens)
		f.leased[id] = token
		job := map[string]any{"id": id, "type": "t", "args": map[string]any{"id": id}, "leaseToken": token, "taskState": map[string]any{"runs": 1}}
		if d, ok := f.deadline[id]; ok {
			job["deadline"] = d.Format(time.RFC3339Nano)
		}
		jobs = append(jobs, job)
	}
	return jobs
}

func (f *fakeJobclock) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	_ = json.NewDecoder(r.Body).Decode(&body)
	kind := "other"
	switch {
	case r.URL.Path == "/jobs/next":
		kind = "lease"
	case r.URL.Path == "/jobs/reports":
		kind = "reports"
	case strings.HasSuffix(r.URL.Path, "/heartbeat"):
		kind = "heartbeat"
	case strings.HasSuffix(r.URL.Path, "/release"):
		kind = "release"
	}
	f.mu.Lock()
	n := 0
	switch kind {
	case "lease":
		f.leaseCalls++
		n = f.leaseCalls
	case "reports":
		f.reportCalls++
		n = f.reportCalls
	}
	fault := f.fault
	f.mu.Unlock()
	if fault != nil && fault(w, r, kind, n) {
		return
	}
	reply := func(status int, v any) {
		w.Header().Set("content-type", "application/json")
		w.WriteHeader(status)
		if v != nil {
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	switch kind {
	case "lease":
		limit := int(body["limit"].(float64))
		end := time.Now().Add(300 * time.Millisecond)
		for {
			f.mu.Lock()
			jobs := f.take(limit)
			f.mu.Unlock()
			if len(jobs) > 0 {
				reply(200, map[string]any{"jobs": jobs})
				return
			}
			if time.Now().After(end) || r.Context().Err() != nil {
				w.WriteHeader(204)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	case "reports":
		f.mu.Lock()
		defer f.mu.Unlock()
		reports := body["reports"].([]any)
		if f.refuseFinal {
			for i, rep := range reports {
				if _, ok := rep.(map[string]any)["final"]; ok {
					reply(400, map[string]any{"title": "Bad Request", "errors": []any{map[string]any{"path": fmt.Sprintf("/reports/%d", i), "message": `Unrecognized key: "final"`}}})
					return
				}
			}
		}
		var results []any
		for _, x := range reports {
			rep := x.(map[string]any)
			id := rep["id"].(string)
			if f.leased[id] != rep["leaseToken"] {
				results = append(results, map[string]any{"id": id, "status": 409, "detail": "lease lost"})
				continue
			}
			delete(f.leased, id)
			f.reports[id] = append(f.reports[id], rep)
			results = append(results, map[string]any{"id": id, "status": 200})
		}
		answer := map[string]any{"results": results}
		if next, ok := body["next"].(map[string]any); ok {
			limit := int(next["limit"].(float64))
			f.nextAsked += limit
			jobs := f.take(limit)
			if jobs == nil {
				jobs = []map[string]any{}
			}
			answer["jobs"] = jobs
		}
		reply(200, answer)
	case "heartbeat":
		id := strings.Split(r.URL.Path, "/")[2]
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.leased[id] != body["leaseToken"] {
			reply(409, map[string]any{"title": "Conflict", "detail": "lease lost"})
			return
		}
		f.beats[id]++
		f.beatTimes[id] = append(f.beatTimes[id], time.Now())
		answer := map[string]any{"cancel": f.cancelled[id]}
		if d, ok := f.deadline[id]; ok {
			answer["deadline"] = d.Format(time.RFC3339Nano)
			if !d.After(time.Now()) {
				answer["cancel"] = true
			}
		}
		reply(200, answer)
	case "release":
		id := strings.Split(r.URL.Path, "/")[2]
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.leased[id] != body["leaseToken"] {
			reply(409, map[string]any{"detail": "lease lost"})
			return
		}
		delete(f.leased, id)
		f.released = append(f.released, id)
		if f.releasedAs == nil {
			f.releasedAs = map[string]map[string]any{}
		}
		f.releasedAs[id] = body
		reply(200, map[string]any{})
	default:
		reply(404, nil)
	}
}

func (f *fakeJobclock) reported(id string) []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reports[id]
}

func (f *fakeJobclock) reportedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reports)
}

func quiet(string, ...any) {}

func until(t *testing.T, what string, ok func() bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start runs a worker until the test stops it; stop() cancels Run's context and waits for Run.
func start(t *testing.T, w *Worker) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestRunsEachJobOnceAndLeasesWithItsReports(t *testing.T) {
	f := newFake(t)
	ids := f.add(500)
	w := New(Options{URL: f.srv.URL, Concurrency: 8, Wait: time.Second, Logf: quiet})
	var mu sync.Mutex
	ran := map[string]int{}
	w.Handle("t", func(ctx context.Context, job *Job) (any, error) {
		var args struct{ ID string }
		if err := job.Decode(&args); err != nil || args.ID != job.ID {
			return nil, fmt.Errorf("args %v: %v", args, err)
		}
		mu.Lock()
		ran[job.ID]++
		mu.Unlock()
		return map[string]any{"by": w.ID()}, nil
	})
	stop := start(t, w)
	until(t, "500 reports", func() bool { return f.reportedCount() == 500 })
	stop()
	for _, id := range ids {
		if ran[id] != 1 || len(f.reported(id)) != 1 {
			t.Fatalf("job %s ran %d times, reported %d times", id, ran[id], len(f.reported(id)))
		}
		rep := f.reported(id)[0]
		if rep["outcome"] != "finished" || rep["result"].(map[string]any)["by"] != w.ID() {
			t.Fatalf("report %v", rep)
		}
	}
	if s := w.Stats(); s.Leased != 500 || s.Finished != 500 || s.Lost != 0 {
		t.Fatalf("stats %+v", s)
	}
	if f.nextAsked == 0 {
		t.Fatal("no report batch asked for the next jobs")
	}
	if f.leaseCalls >= 500/8 {
		t.Fatalf("%d long-polls for 500 jobs at concurrency 8: the reports do not lease", f.leaseCalls)
	}
}

func TestWhatAHandlerReturnsIsWhatItReports(t *testing.T) {
	cases := []struct {
		name    string
		handler HandlerFunc
		want    map[string]any
	}{
		{"a value is the result", func(context.Context, *Job) (any, error) { return map[string]any{"state": "sent"}, nil },
			map[string]any{"outcome": "finished", "result": map[string]any{"state": "sent"}}},
		{"nil reports no result", func(context.Context, *Job) (any, error) { return nil, nil },
			map[string]any{"outcome": "finished"}},
		{"Result carries the task state", func(context.Context, *Job) (any, error) {
			return Result{Value: 1, State: map[string]any{"runs": 2}}, nil
		},
			map[string]any{"outcome": "finished", "result": 1.0, "state": map[string]any{"runs": 2.0}}},
		{"SaveState goes with the report", func(ctx context.Context, job *Job) (any, error) {
			var s struct{ Runs int }
			if ok, err := job.DecodeTaskState(&s); !ok || err != nil || s.Runs != 1 {
				return nil, fmt.Errorf("task state %v %v", ok, err)
			}
			return "ok", job.SaveState(map[string]any{"runs": s.Runs + 1})
		}, map[string]any{"outcome": "finished", "result": "ok", "state": map[string]any{"runs": 2.0}}},
		{"an error reports failed", func(context.Context, *Job) (any, error) { return nil, errors.New("boom") },
			map[string]any{"outcome": "failed", "error": map[string]any{"message": "boom"}}},
		{"RetryLater sets retryIn", func(context.Context, *Job) (any, error) {
			return nil, RetryLater(1500*time.Millisecond, errors.New("busy"))
		},
			map[string]any{"outcome": "failed", "retryIn": "1500ms", "error": map[string]any{"message": "busy", "type": "RetryLater"}}},
		{"a wrapped RetryLater too", func(context.Context, *Job) (any, error) {
			return nil, fmt.Errorf("upstream: %w", RetryLater(time.Minute, errors.New("429")))
		}, map[string]any{"outcome": "failed", "retryIn": "60000ms", "error": map[string]any{"message": "429", "type": "RetryLater"}}},
		{"Final fails for good", func(context.Context, *Job) (any, error) { return nil, Final(errors.New("bad args")) },
			map[string]any{"outcome": "failed", "final": true, "error": map[string]any{"message": "bad args", "type": "Final"}}},
		{"a panic reports failed", func(context.Context, *Job) (any, error) { panic("oops") },
			map[string]any{"outcome": "failed", "error": map[string]any{"message": "panic: oops"}}},
		{"a result that is not JSON reports failed", func(context.Context, *Job) (any, error) { return make(chan int), nil },
			map[string]any{"outcome": "failed", "error": map[string]any{"message": "the result is not JSON: json: unsupported type: chan int"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			id := f.add(1)[0]
			w := New(Options{URL: f.srv.URL, Wait: time.Second, Logf: quiet})
			w.Handle("t", c.handler)
			stop := start(t, w)
			until(t, "the report", func() bool { return len(f.reported(id)) == 1 })
			stop()
			got := f.reported(id)[0]
			delete(got, "id")
			delete(got, "leaseToken")
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Fatalf("reported %v, want %v", got, c.want)
			}
		})
	}
}

func TestFinalFallsBackToAPlainFailureOnAServerWithoutIt(t *testing.T) {
	f := newFake(t)
	f.refuseFinal = true
	id := f.add(1)[0]
	w := New(Options{URL: f.srv.URL, Wait: time.Second, Logf: quiet})
	w.Handle("t", func(context.Context, *Job) (any, error) { return nil, Final(errors.New("bad args")) })
	stop := start(t, w)
	until(t, "the report", func() bool { return len(f.reported(id)) == 1 })
	stop()
	if rep := f.reported(id)[0]; rep["outcome"] != "failed" || rep["final"] != nil {
		t.Fatalf("reported %v", rep)
	}
}

func TestHeartbeatsAtAThirdOfTheLease(t *testing.T) {
	f := newFake(t)
	id := f.add(1)[0]
	w := New(Options{URL: f.srv.URL, Lease: 1200 * time.Millisecond, Wait: time.Second, Logf: quiet})
	w.Handle("t", func(ctx context.Context, job *Job) (any, error) {
		time.Sleep(1500 * time.Millisecond) // past the lease
		return nil, nil
	})
	stop := start(t, w)
	until(t, "the report", func() bool { return len(f.reported(id)) == 1 })
	stop()
	f.mu.Lock()
	at := append([]time.Time(nil), f.beatTimes[id]...)
	f.mu.Unlock()
	// at 0.4 s, 0.8 s, 1.2 s: the gaps between beats are a third of the lease (ticks of 100 ms may
	// shift one, a busy machine delay one: the median gap, not the count within 1.5 s)
	if len(at) < 2 {
		t.Fatalf("%d heartbeats in 1.5 s on a 1.2 s lease", len(at))
	}
	var gaps []time.Duration
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	if g := gaps[len(gaps)/2]; g < 250*time.Millisecond || g > 580*time.Millisecond {
		t.Fatalf("heartbeats %v apart on a 1.2 s lease, want about 400 ms", gaps)
	}
	if len(at) > 5 {
		t.Fatalf("%d heartbeats in 1.5 s on a 1.2 s lease", len(at))
	}
}

func TestCancelReachesTheHandlersContext(t *testing.T) {
	f := newFake(t)
	id := f.add(1)[0]
	w := New(Options{URL: f.srv.URL, Lease: time.Second, Wait: time.Second, Logf: quiet})
	w.Handle("t", func(ctx context.Context, job *Job) (any, error) {
		select {
		case <-ctx.Done():
			return map[string]any{"reason": StopReason(ctx).Error()}, nil
		case <-time.After(5 * time.Second):
			return nil, errors.New("never told")
		}
	})
	stop := start(t, w)
	until(t, "the lease", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.leased[id] != "" })
	f.mu.Lock()
	f.cancelled[id] = true
	f.mu.Unlock()
	until(t, "the report", func() bool { return len(f.reported(id)) == 1 })
	stop()
	if got := f.reported(id)[0]["result"]; fmt.Sprint(got) != fmt.Sprint(map[string]any{"reason": ErrCancelled.Error()}) {
		t.Fatalf("result %v", got)
	}
}

func TestTheDeadlineCancelsTheHandlersContext(t *testing.T) {
	f := newFake(t)
	id := f.add(1)[0]
	f.deadline[id] = time.Now().Add(300 * time.Millisecond)
	w := New(Options{URL: f.srv.URL, Wait: time.Second, Logf: quiet})
	w.Handle("t", func(ctx context.Context, job *Job) (any, error) {
		if d, ok := ctx.Deadline(); !ok || !d.Equal(*job.Deadline) {
			return nil, fmt.Errorf("ctx.Deadline() %v %v", d, ok)
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	stop := start(t, w)
	until(t, "the report", func() bool { return len(f.reported(id)) == 1 })
	stop()
	rep := f.reported(id)[0]
	if rep["outcome"] != "failed" || rep["error"].(map[string]any)["reason"] != "deadline" {
		t.Fatalf("reported %v", rep)
	}
}

func TestStopWaitsForHandlersThenGivesBackTheRest(t *testing.T) {
	f := newFake(t)
	ids := f.add(4)
	w := New(Options{URL: f.srv.URL, Concurrency: 4, Wait: time.Second, StopTimeout: 300 * time.Millisecond, Logf: quiet})
	var started atomic.Int32
	w.Handle("t", func(ctx context.Context, job *Job) (any, error) {
		started.Add(1)
		switch job.ID {
		case ids[0]: // wraps up when told
			<-ctx.Done()
			return map[string]any{"reason": StopReason(ctx).Error()}, nil
		case ids[1]: // gives up: its job goes back
			<-ctx.Done()
			return nil, ctx.Err()
		default: // ignores its context: given back after StopTimeout
			time.Sleep(2 * time.Second)
			return "late", nil
		}
	})
	stop := start(t, w)
	until(t, "4 handlers", func() bool { return started.Load() == 4 })
	t0 := time.Now()
	stop()
	if took := time.Since(t0); took < 300*time.Millisecond || took > 1500*time.Millisecond {
		t.Fatalf("stop took %s", took)
	}
	if rep := f.reported(ids[0]); len(rep) != 1 || rep[0]["outcome"] != "finished" {
		t.Fatalf("the handler that wrapped up: %v", rep)
	}
	f.mu.Lock()
	released := append([]string(nil), f.released...)
	f.mu.Unlock()
	sort.Strings(released)
	want := append([]string(nil), ids[1:]...)
	sort.Strings(want)
	if fmt.Sprint(released) != fmt.Sprint(want) {
		t.Fatalf("given back %v, want %v", released, want)
	}
	if s := w.Stats(); s.GivenBack != 3 || s.Finished != 1 {
		t.Fatalf("stats %+v", s)
	}
}

func TestRetriesThrough503sAndCutConnections(t *testing.T) {
	f := newFake(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, kind string, n int) bool {
		if (kind == "lease" && n <= 3) || (kind == "reports" && n <= 2) {
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"title":"Service Unavailable","detail":"the database is unreachable"}`))
			return true
		}
		if (kind == "lease" && n == 4) || (kind == "reports" && n == 3) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return true
		}
		return false
	}
	ids := f.add(20)
	var logs strings.Builder
	var logMu sync.Mutex
	w := New(Options{URL: f.srv.URL, Wait: time.Second, MaxBackoff: 200 * time.Millisecond, Logf: func(format string, args ...any) {
		logMu.Lock()
		fmt.Fprintf(&logs, format+"\n", args...)
		logMu.Unlock()
	}})
	w.Handle("t", func(context.Context, *Job) (any, error) { return nil, nil })
	stop := start(t, w)
	until(t, "20 reports", func() bool { return f.reportedCount() == 20 })
	stop()
	for _, id := range ids {
		if len(f.reported(id)) != 1 {
			t.Fatalf("job %s reported %d times", id, len(f.reported(id)))
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logs.String(), "lease failed") || !strings.Contains(logs.String(), "reports failed") {
		t.Fatalf("logs:\n%s", logs.String())
	}
}

func TestBackoffDoublesUpToItsCapWithJitter(t *testing.T) {
	w := New(Options{URL: "http://127.0.0.1:9", MaxBackoff: time.Second})
	for i, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		if i >= 4 {
			full = time.Second
		}
		d := w.backoff(i + 1)
		if d < full/2 || d > full {
			t.Fatalf("backoff(%d) = %s, want %s..%s", i+1, d, full/2, full)
		}
	}
	if d := w.backoff(1000); d < 500*time.Millisecond || d > time.Second {
		t.Fatalf("backoff(1000) = %s", d)
	}
}

func TestNewRefusesOptionsThatCannotWork(t *testing.T) {
	for _, o := range []Options{{URL: "127.0.0.1:3000"}, {URL: "http://x", Lease: 500 * time.Millisecond}, {URL: "http://x", Concurrency: -1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%+v) did not panic", o)
				}
			}()
			New(o)
		}()
	}
	if err := New(Options{URL: "http://x"}).Run(context.Background()); err == nil || !strings.Contains(err.Error(), "no handlers") {
		t.Fatalf("Run without handlers: %v", err)
	}
}

func TestJobsLeasedWithAReportAnsweredAfterTheStopBeganAreGivenBack(t *testing.T) {
	f := newFake(t)
	var slowReports atomic.Bool
	f.fault = func(w http.ResponseWriter, r *http.Request, kind string, n int) bool {
		if kind == "reports" && slowReports.Load() {
			time.Sleep(300 * time.Millisecond) // the stop begins while this batch (with next) is on its way
		}
		return false
	}
	f.add(100)
	w := New(Options{URL: f.srv.URL, Concurrency: 8, Wait: time.Second, Logf: quiet})
	w.Handle("t", func(context.Context, *Job) (any, error) {
		slowReports.Store(true)
		return nil, nil
	})
	stop := start(t, w)
	until(t, "a report on its way", func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.reportCalls > 0 })
	stop()
	s := w.Stats()
	if s.Leased != s.Finished+s.GivenBack || s.GivenBack == 0 {
		t.Fatalf("stats %+v: every leased job finished or given back, some given back", s)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.leased) != 0 {
		t.Fatalf("%d jobs still leased after Run returned", len(f.leased))
	}
}

func TestSnoozeGivesTheJobBackWithRetryInAndState(t *testing.T) {
	f := newFake(t)
	id := f.add(1)[0]
	w := New(Options{URL: f.srv.URL, Wait: time.Second, Logf: quiet})
	w.Handle("t", func(_ context.Context, job *Job) (any, error) {
		if ok, err := job.DecodeCheckpoint(&struct{}{}); ok || err != nil {
			return nil, fmt.Errorf("a first attempt has no checkpoint: %v %v", ok, err)
		}
		if err := job.SaveState(map[string]any{"page": 3}); err != nil {
			return nil, err
		}
		return nil, Snooze(10*time.Minute, errors.New("the upstream asked for 10 minutes"))
	})
	stop := start(t, w)
	until(t, "the give-back", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.releasedAs[id] != nil
	})
	stop()
	f.mu.Lock()
	body := f.releasedAs[id]
	f.mu.Unlock()
	if fmt.Sprint(body["retryIn"]) != "600000ms" || fmt.Sprint(body["state"]) != "map[page:3]" {
		t.Fatalf("gave back with %v, want retryIn 600000ms and state {page: 3}", body)
	}
	if got := f.reported(id); len(got) != 0 {
		t.Fatalf("a snoozed job was also reported: %v", got)
	}
}
