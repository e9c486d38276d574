// Package jobclock is a worker for jobclock: it leases jobs over HTTP, runs a handler per job type,
// heartbeats, reports outcomes in batches and stops cleanly. Standard library only.
//
//	w := jobclock.New(jobclock.Options{URL: "http://127.0.0.1:3000", Token: os.Getenv("JOBCLOCK_TOKEN")})
//	w.Handle("mail.send", func(ctx context.Context, job *jobclock.Job) (any, error) {
//		// ... do the work; ctx is cancelled when the job must stop (jobclock.StopReason(ctx) says why)
//		return map[string]any{"sent": true}, nil // the job's result
//	})
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
//	defer stop()
//	err := w.Run(ctx) // returns once stopped: handlers waited for, the rest given back, reports sent
//
// What it does:
//   - Leases with a long-poll (POST /jobs/next, Options.Wait) only the types it has handlers for,
//     up to its free slots (Options.Concurrency, at most 100 a request); each job runs on a
//     goroutine of its own. A slot frees when its handler returns.
//   - Heartbeats every running job at a third of its lease; the job's context is cancelled when a
//     heartbeat answers cancel (StopReason: ErrCancelled, or ErrDeadline past the deadline), at
//     the job's deadline, when the lease is lost (ErrLeaseLost) and when the worker stops
//     (ErrWorkerStopping).
//   - A handler's value is the job's result (Result carries task state for the next run too); an
//     error reports it failed (RetryLater sets retryIn; Final fails it for good). Reports go in
//     batches through POST /jobs/reports, each leasing the next jobs for the free slots (next).
//   - When Run's context ends it stops leasing, cancels the running handlers' contexts, waits up
//     to Options.StopTimeout for them (what they return is reported), gives back the leases of the
//     rest (POST /jobs/{id}/release: queued again at once, the attempt not counted) and sends
//     every queued report.
//   - 502/503/504 answers and cut connections are retried with a capped exponential back-off.
package jobclock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HandlerFunc runs one job. Its value is the job's result (nil: none); an error reports it failed.
type HandlerFunc func(ctx context.Context, job *Job) (any, error)

// Options configure a Worker; only URL is required.
type Options struct {
	// URL is where jobclock listens, e.g. http://127.0.0.1:3000.
	URL string
	// Token is a bearer token with the worker (or admin) role; empty when jobclock has no tokens.
	Token string
	// Concurrency is how many jobs run at once (default 8).
	Concurrency int
	// Lease is the lease asked for (default 30s, at least 1s); heartbeats go at a third of it.
	Lease time.Duration
	// Wait is how long one long-poll waits for a job (default 30s, at most 60s).
	Wait time.Duration
	// WorkerID is the worker's name on the jobs it runs (default <host>-<pid>-<random>).
	WorkerID string
	// Groups, when set, leases only jobs of these groups.
	Groups []string
	// StopTimeout is how long a stop waits for running handlers before it gives their jobs back (default 10s).
	StopTimeout time.Duration
	// ReportDelay is how long a report waits for company before it is sent (default 5ms); at most 100 go together.
	ReportDelay time.Duration
	// MaxBackoff caps the back-off after 503s and connection errors (default 5s).
	MaxBackoff time.Duration
	// RequestTimeout bounds a request other than the long-poll (default 30s).
	RequestTimeout time.Duration
	// HTTPClient sends the requests (default: a client keeping Concurrency+4 connections alive).
	HTTPClient *http.Client
	// Logf receives what the worker recovers from and its life cycle (default log.Printf).
	Logf func(format string, args ...any)
}

// Stats counts what a Worker did.
type Stats struct {
	Leased    int64 `json:"leased"`
	Finished  int64 `json:"finished"`
	Failed    int64 `json:"failed"`
	GivenBack int64 `json:"given_back"`
	Lost      int64 `json:"lost"`
}

const (
	maxLimit        = 100
	maxReports      = 100
	maxWaiting      = 1000 // reports queued or in flight before leasing pauses
	stopLeaseGrace  = 250 * time.Millisecond
	stoppingRetries = 8
)

// Worker runs handlers for job types against a jobclock server. Make one with New, add handlers
// with Handle, then Run it.
type Worker struct {
	opts      Options
	base      string
	id        string
	handlers  map[string]HandlerFunc
	types     []string
	client    *http.Client
	beatEvery time.Duration
	logf      func(format string, args ...any)

	leased, finished, failed, givenBack, lost atomic.Int64
	// releases counts give-backs on their way: Run returns once they are answered
	releases sync.WaitGroup

	mu             sync.Mutex
	started        bool
	stopping       bool
	running        map[string]*running
	reserved       int // slots promised to the jobs a report batch in flight asks for
	polling        int // the limit of the long-poll in flight
	nextOnReports  bool
	finalOnReports bool
	reports        []report
	inFlight       int
	leaseCancel    context.CancelFunc
	leaseAnswered  bool

	wake       chan struct{} // the lease loop: a slot freed, reports were sent, stopping
	reportWake chan struct{} // the report loop: reports queued
	stopCh     chan struct{} // closed when stopping begins
	closeCh    chan struct{} // closed when the heartbeat and report loops must end
}

// New makes a Worker. It panics on options that cannot work (no URL, Lease under 1s), as a
// misconfiguration is found at start rather than at the first job.
func New(opts Options) *Worker {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		panic(fmt.Sprintf("jobclock.New: URL must be http(s)://host[:port], got %q", opts.URL))
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 8
	}
	if opts.Concurrency < 1 {
		panic(fmt.Sprintf("jobclock.New: Concurrency must be at least 1, got %d", opts.Concurrency))
	}
	if opts.Lease == 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Lease < time.Second || opts.Lease > 24*time.Hour {
		panic(fmt.Sprintf("jobclock.New: Lease must be from 1s to 24h, got %s", opts.Lease))
	}
	if opts.Wait == 0 {
		opts.Wait = 30 * time.Second
	}
	if opts.Wait > 60*time.Second {
		opts.Wait = 60 * time.Second
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.ReportDelay == 0 {
		opts.ReportDelay = 5 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 30 * time.Second
	}
	id := opts.WorkerID
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s-%d-%06x", host, os.Getpid(), rand.Intn(1<<24))
	}
	client := opts.HTTPClient
	if client == nil {
		// the default transport keeps 2 idle connections a host: reports, heartbeats and the
		// long-poll of a busy worker would open and close connections all the time
		client = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        opts.Concurrency + 4,
			MaxIdleConnsPerHost: opts.Concurrency + 4,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(format string, args ...any) { log.Printf("jobclock: "+format, args...) }
	}
	return &Worker{
		opts:           opts,
		base:           strings.TrimRight(opts.URL, "/"),
		id:             id,
		handlers:       map[string]HandlerFunc{},
		client:         client,
		beatEvery:      opts.Lease / 3,
		logf:           logf,
		running:        map[string]*running{},
		nextOnReports:  true,
		finalOnReports: true,
		wake:           make(chan struct{}, 1),
		reportWake:     make(chan struct{}, 1),
		stopCh:         make(chan struct{}),
		closeCh:        make(chan struct{}),
	}
}

// Handle sets the handler of a job type; the worker leases only the types it has handlers for.
// Call it before Run.
func (w *Worker) Handle(jobType string, h HandlerFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic("jobclock: Handle after Run")
	}
	w.handlers[jobType] = h
}

// ID is the worker's name on the jobs it runs.
func (w *Worker) ID() string { return w.id }

// Stats counts the jobs leased, finished, failed, given back and lost so far.
func (w *Worker) Stats() Stats {
	return Stats{w.leased.Load(), w.finished.Load(), w.failed.Load(), w.givenBack.Load(), w.lost.Load()}
}

// Run leases and runs jobs until ctx ends, then stops cleanly (see the package documentation) and
// returns nil. A Worker runs once.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.started {
		w.mu.Unlock()
		return errors.New("jobclock: this Worker ran already")
	}
	if len(w.handlers) == 0 {
		w.mu.Unlock()
		return errors.New(`jobclock: no handlers (w.Handle("<type>", func(ctx, job) (any, error) { ... }))`)
	}
	w.started = true
	for t := range w.handlers {
		w.types = append(w.types, t)
	}
	sort.Strings(w.types)
	w.mu.Unlock()
	w.logf("worker %s started: types %v, concurrency %d, lease %s", w.id, w.types, w.opts.Concurrency, w.opts.Lease)

	leaseDone := make(chan struct{})
	reportDone := make(chan struct{})
	beatDone := make(chan struct{})
	go func() { defer close(leaseDone); w.leaseLoop() }()
	go func() { defer close(reportDone); w.reportLoop() }()
	go func() { defer close(beatDone); w.beatLoop() }()

	<-ctx.Done()
	w.shutdown(leaseDone)
	close(w.closeCh)
	<-reportDone
	<-beatDone
	w.releases.Wait()
	w.logf("worker %s stopped: %+v", w.id, w.Stats())
	return nil
}

func (w *Worker) shutdown(leaseDone chan struct{}) {
	w.mu.Lock()
	w.stopping = true
	close(w.stopCh)
	w.signal()
	n := len(w.running)
	w.mu.Unlock()
	w.logf("worker %s stopping: waiting up to %s for %d running job(s)", w.id, w.opts.StopTimeout, n)

	// A lease whose answer is on its way would strand its jobs until their leases expire if it
	// were cut: only a long-poll still waiting after a moment is abandoned (jobclock gives back
	// what it claimed for a request that went away).
	select {
	case <-leaseDone:
	case <-time.After(stopLeaseGrace):
		w.mu.Lock()
		if !w.leaseAnswered && w.leaseCancel != nil {
			w.leaseCancel()
		}
		w.mu.Unlock()
		<-leaseDone
	}

	// handlers are told now, so that one that can wrap up (save state, return) does
	w.mu.Lock()
	for _, r := range w.running {
		r.stop(ErrWorkerStopping)
	}
	w.mu.Unlock()
	end := time.Now().Add(w.opts.StopTimeout)
	for {
		w.mu.Lock()
		n := len(w.running)
		w.mu.Unlock()
		if n == 0 || time.Now().After(end) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.mu.Lock()
	var stragglers []*Job
	for id, r := range w.running {
		r.mu.Lock()
		if !r.settled {
			r.settled = true
			stragglers = append(stragglers, r.job)
		}
		r.mu.Unlock()
		delete(w.running, id)
	}
	w.mu.Unlock()
	if len(stragglers) > 0 {
		w.logf("giving back %d job(s) still running after %s", len(stragglers), w.opts.StopTimeout)
	}
	for _, job := range stragglers {
		w.releases.Add(1)
		go func(job *Job) { defer w.releases.Done(); w.release(job, nil) }(job)
	}
	w.releases.Wait()
}

// signal wakes the lease loop; the caller holds w.mu or not, either is fine.
func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// ---------------------------------------------------------------------------------------------
// leasing

// free is the slots without a running handler or a reservation; none while a full backlog of
// reports waits to be accepted. The caller holds w.mu.
func (w *Worker) free() int {
	if len(w.reports)+w.inFlight >= maxWaiting {
		return 0
	}
	return w.opts.Concurrency - len(w.running) - w.reserved
}

func (w *Worker) leaseLoop() {
	failures := 0
	for {
		w.mu.Lock()
		// reports about to go out lease the next jobs themselves (next): the long-poll waits for
		// their answer and takes what is left
		for !w.stopping && (w.free() <= 0 || (len(w.reports) > 0 && w.nextOnReports)) {
			w.mu.Unlock()
			select {
			case <-w.wake:
			case <-time.After(500 * time.Millisecond):
			}
			w.mu.Lock()
		}
		if w.stopping {
			w.mu.Unlock()
			return
		}
		limit := w.free()
		if limit > maxLimit {
			limit = maxLimit
		}
		w.polling = limit
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.Wait+w.opts.RequestTimeout)
		w.leaseCancel, w.leaseAnswered = cancel, false
		w.mu.Unlock()

		jobs, err := w.lease(ctx, limit)
		cancel()
		w.mu.Lock()
		w.leaseCancel = nil
		w.polling = 0
		started := w.register(jobs) // before the reporter sees the slots free
		w.mu.Unlock()
		w.launch(started)
		if err != nil {
			if w.isStopping() {
				return
			}
			failures++
			delay := w.backoff(failures)
			w.logf("lease failed (%v); retrying in %s", err, delay.Round(time.Millisecond))
			select {
			case <-w.stopCh:
			case <-time.After(delay):
			}
			continue
		}
		failures = 0
	}
}

func (w *Worker) isStopping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopping
}

func (w *Worker) lease(ctx context.Context, limit int) ([]*Job, error) {
	body := map[string]any{
		"worker": w.id, "types": w.types, "limit": limit,
		"wait": durationMs(w.opts.Wait), "lease": durationMs(w.opts.Lease),
	}
	if len(w.opts.Groups) > 0 {
		body["groups"] = w.opts.Groups
	}
	status, payload, err := w.post(ctx, "/jobs/next", body, func() {
		w.mu.Lock()
		w.leaseAnswered = true
		w.mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	switch status {
	case 204:
		return nil, nil
	case 200:
		var answer struct {
			Jobs []*Job `json:"jobs"`
		}
		if err := json.Unmarshal(payload, &answer); err != nil {
			return nil, fmt.Errorf("POST /jobs/next: %w", err)
		}
		return answer.Jobs, nil
	default:
		return nil, &HTTPError{Status: status, What: "POST /jobs/next", Detail: detail(payload)}
	}
}

// ---------------------------------------------------------------------------------------------
// running a job

// register takes slots for leased jobs; the caller holds w.mu. Jobs leased while stopping are
// given back at once (launch does it).
func (w *Worker) register(jobs []*Job) []*running {
	out := make([]*running, 0, len(jobs))
	for _, job := range jobs {
		w.leased.Add(1)
		r := &running{worker: w, job: job, beatAt: time.Now().Add(w.beatEvery)}
		job.run = r
		if w.stopping {
			r.settled = true
		} else {
			// the context exists from the moment the job holds a slot: a stop may cancel it
			// before its handler starts
			base, cancel := context.WithCancel(context.WithValue(context.Background(), reasonKey{}, r))
			r.ctx, r.cancel = base, cancel
			if job.Deadline != nil {
				ctx, cancelDeadline := context.WithDeadline(base, *job.Deadline)
				r.ctx, r.cancel = ctx, func() { cancelDeadline(); cancel() }
			}
			w.running[job.ID] = r
		}
		out = append(out, r)
	}
	return out
}

func (w *Worker) launch(rs []*running) {
	for _, r := range rs {
		if r.ctx == nil { // leased while stopping: given back at once
			w.releases.Add(1)
			go func(job *Job) { defer w.releases.Done(); w.release(job, nil) }(r.job)
			continue
		}
		go w.runHandler(r.ctx, r)
	}
}

func (w *Worker) runHandler(ctx context.Context, r *running) {
	defer r.cancel()
	job := r.job
	value, err := w.call(ctx, job)
	rep := report{ID: job.ID, LeaseToken: job.LeaseToken}
	r.mu.Lock()
	state, reason := r.state, r.reason
	r.mu.Unlock()
	if reason == nil && ctx.Err() == context.DeadlineExceeded {
		reason = ErrDeadline
	}
	giveBack := false
	var back map[string]any // a Snooze's retryIn and state, sent with the give-back
	if err == nil {
		if res, ok := value.(Result); ok {
			value, state = res.Value, nil
			if raw, e := json.Marshal(res.State); e == nil {
				state = raw
			} else {
				err = fmt.Errorf("the state is not JSON: %w", e)
			}
		} else if res, ok := value.(*Result); ok && res != nil {
			value, state = res.Value, nil
			if raw, e := json.Marshal(res.State); e == nil {
				state = raw
			} else {
				err = fmt.Errorf("the state is not JSON: %w", e)
			}
		}
	}
	if err == nil && value != nil {
		raw, e := json.Marshal(value)
		if e != nil {
			err = fmt.Errorf("the result is not JSON: %w", e)
		} else {
			rep.Result = raw
		}
	}
	if err == nil {
		rep.Outcome = "finished"
	} else {
		rep.Outcome = "failed"
		rep.Result = nil
		rep.Error = errorJSON(err, reason)
		var later *RetryLaterError
		var final *FinalError
		var snooze *SnoozeError
		if errors.As(err, &later) {
			rep.RetryIn = durationMs(later.After)
		}
		if errors.As(err, &final) {
			rep.Final = true
		}
		// a handler that gave up because the worker stops: its job goes back, the attempt not counted
		giveBack = reason == ErrWorkerStopping && (errors.Is(err, context.Canceled) || errors.Is(err, ErrWorkerStopping))
		if errors.As(err, &snooze) {
			// not now: given back to run again after After, the attempt not counted, with the state
			giveBack = true
			back = map[string]any{"retryIn": durationMs(snooze.After)}
			if state != nil {
				back["state"] = state
			}
		}
	}
	rep.State = state

	w.mu.Lock()
	r.mu.Lock()
	settled := r.settled
	r.returned = true
	if giveBack && !settled {
		r.settled = true
	}
	r.mu.Unlock()
	if giveBack && !settled {
		w.releases.Add(1) // before the stop can see the slot free
	}
	if w.running[job.ID] == r {
		delete(w.running, job.ID)
	}
	if !settled && !giveBack {
		w.reports = append(w.reports, rep)
		select {
		case w.reportWake <- struct{}{}:
		default:
		}
	}
	w.signal()
	w.mu.Unlock()
	if giveBack && !settled {
		w.release(job, back)
		w.releases.Done()
	}
}

// call runs the handler; a panic is the job's failure, not the worker's end.
func (w *Worker) call(ctx context.Context, job *Job) (value any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	h := w.handlers[job.Type]
	if h == nil {
		return nil, fmt.Errorf("no handler for job type %q", job.Type)
	}
	return h(ctx, job)
}

// ---------------------------------------------------------------------------------------------
// heartbeats

func (w *Worker) beatLoop() {
	tick := w.beatEvery / 4
	if tick < 50*time.Millisecond {
		tick = 50 * time.Millisecond
	}
	if tick > time.Second {
		tick = time.Second
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-w.closeCh:
			return
		case <-ticker.C:
		}
		now := time.Now()
		var due []*running
		w.mu.Lock()
		for _, r := range w.running {
			r.mu.Lock()
			if !r.settled && !r.beating && !r.beatAt.After(now) {
				r.beating = true
				due = append(due, r)
			}
			r.mu.Unlock()
		}
		w.mu.Unlock()
		for _, r := range due {
			go func(r *running) {
				_ = w.beat(r)
				r.mu.Lock()
				r.beating = false
				r.mu.Unlock()
			}(r)
		}
	}
}

// beat heartbeats one job with its latest progress and state.
func (w *Worker) beat(r *running) error {
	r.mu.Lock()
	if r.settled {
		r.mu.Unlock()
		return nil
	}
	r.beatAt = time.Now().Add(w.beatEvery)
	body := map[string]any{"leaseToken": r.job.LeaseToken, "lease": durationMs(w.opts.Lease)}
	if r.progress != nil {
		body["progress"] = r.progress
	}
	if r.state != nil {
		body["state"] = r.state
	}
	r.mu.Unlock()
	// a hung heartbeat must not hold the job past its lease: it times out within a beat
	timeout := w.beatEvery
	if timeout < time.Second {
		timeout = time.Second
	}
	if timeout > w.opts.RequestTimeout {
		timeout = w.opts.RequestTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	path := "/jobs/" + url.PathEscape(r.job.ID) + "/heartbeat"
	status, payload, err := w.post(ctx, path, body, nil)
	if err != nil {
		retry := w.beatEvery / 2
		if retry > time.Second {
			retry = time.Second
		}
		r.mu.Lock()
		r.beatAt = time.Now().Add(retry)
		r.mu.Unlock()
		w.logf("heartbeat of job %s failed (%v); trying again", r.job.ID, err)
		return err
	}
	switch status {
	case 200:
		var answer struct {
			Cancel   bool       `json:"cancel"`
			Deadline *time.Time `json:"deadline"`
		}
		_ = json.Unmarshal(payload, &answer)
		if answer.Cancel {
			reason := ErrCancelled
			if answer.Deadline != nil && !answer.Deadline.After(time.Now()) {
				reason = ErrDeadline
			}
			r.stop(reason)
		}
		return nil
	case 404, 409:
		r.mu.Lock()
		already := r.settled || r.returned
		if !already {
			r.settled = true
		}
		r.mu.Unlock()
		if !already {
			w.lost.Add(1)
			w.logf("job %s: lease lost (heartbeat %d: %s)", r.job.ID, status, detail(payload))
			r.stop(ErrLeaseLost)
		}
		return ErrLeaseLost
	default:
		err := &HTTPError{Status: status, What: "POST " + path, Detail: detail(payload)}
		w.logf("%v", err)
		return err
	}
}

// ---------------------------------------------------------------------------------------------
// give-backs

// release gives a leased job back (POST /jobs/{id}/release): queued again at once (or after the
// retryIn in extra, a Snooze), the attempt not counted. After 5 failed tries its lease expires on
// its own and it runs again then.
func (w *Worker) release(job *Job, extra map[string]any) {
	path := "/jobs/" + url.PathEscape(job.ID) + "/release"
	body := map[string]any{"leaseToken": job.LeaseToken}
	for k, v := range extra {
		body[k] = v
	}
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.RequestTimeout)
		status, payload, err := w.post(ctx, path, body, nil)
		cancel()
		if err == nil {
			if status == 200 {
				w.givenBack.Add(1)
			} else {
				w.logf("job %s: give-back answered %d (%s): its lease was gone already", job.ID, status, detail(payload))
			}
			return
		}
		if attempt >= 5 {
			w.logf("job %s: could not give its lease back (%v); it runs again when the lease expires", job.ID, err)
			return
		}
		time.Sleep(w.backoff(attempt))
	}
}

// ---------------------------------------------------------------------------------------------
// reports

type report struct {
	ID         string          `json:"id"`
	LeaseToken string          `json:"leaseToken"`
	Outcome    string          `json:"outcome"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      any             `json:"error,omitempty"`
	RetryIn    string          `json:"retryIn,omitempty"`
	State      json.RawMessage `json:"state,omitempty"`
	Final      bool            `json:"final,omitempty"`
}

func (w *Worker) reportLoop() {
	for {
		w.mu.Lock()
		for len(w.reports) == 0 {
			w.mu.Unlock()
			select {
			case <-w.reportWake:
			case <-w.closeCh:
				w.mu.Lock()
				if len(w.reports) == 0 {
					w.mu.Unlock()
					return
				}
				w.mu.Unlock()
			}
			w.mu.Lock()
		}
		stopping := w.stopping
		w.mu.Unlock()
		if !stopping && w.opts.ReportDelay > 0 {
			w.linger()
		}
		w.mu.Lock()
		n := len(w.reports)
		if n > maxReports {
			n = maxReports
		}
		batch := append([]report(nil), w.reports[:n]...)
		w.reports = w.reports[n:]
		w.inFlight += n
		// the batch leases the next jobs into the slots free beside the long-poll, so under a
		// binding concurrency limit the slots its jobs held pass on without a gap
		next := 0
		if !w.stopping && w.nextOnReports {
			next = w.free() - w.polling
			if next > maxLimit {
				next = maxLimit
			}
			if next < 0 {
				next = 0
			}
		}
		w.reserved += next
		w.mu.Unlock()
		w.signal()
		w.send(batch, next)
		w.mu.Lock()
		w.inFlight -= n
		w.mu.Unlock()
		w.signal()
	}
}

// linger lets the reports of handlers still running join the batch, for up to ReportDelay; with
// none left running nothing can join, and the batch (which leases the next jobs) goes at once.
func (w *Worker) linger() {
	timer := time.NewTimer(w.opts.ReportDelay)
	defer timer.Stop()
	for {
		w.mu.Lock()
		done := len(w.running) == 0 || len(w.reports) >= maxReports || w.stopping
		w.mu.Unlock()
		if done {
			return
		}
		select {
		case <-w.reportWake: // a handler returned
		case <-timer.C:
			return
		}
	}
}

// send sends one batch of reports, the first try asking for up to next jobs with it. A retry
// leases nothing: the jobs a try whose answer was lost leased come back when their leases expire.
func (w *Worker) send(batch []report, next int) {
	reserved := next
	unreserve := func() {
		w.mu.Lock()
		w.reserved -= reserved
		reserved = 0
		w.mu.Unlock()
		w.signal()
	}
	defer unreserve()
	for attempt := 1; ; attempt++ {
		w.mu.Lock()
		if !w.finalOnReports {
			batch = withoutFinal(batch)
		}
		w.mu.Unlock()
		body := map[string]any{"reports": batch}
		if reserved > 0 {
			nextBody := map[string]any{"worker": w.id, "types": w.types, "limit": reserved, "lease": durationMs(w.opts.Lease)}
			if len(w.opts.Groups) > 0 {
				nextBody["groups"] = w.opts.Groups
			}
			body["next"] = nextBody
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.RequestTimeout)
		status, payload, err := w.post(ctx, "/jobs/reports", body, nil)
		cancel()
		if err == nil && status == 200 {
			w.accepted(batch, payload, &reserved)
			return
		}
		if err == nil && status == 400 && reserved > 0 && refuses(payload, "/next") {
			w.logf("jobclock does not take next on reports (an older server): leasing by long-poll only")
			w.mu.Lock()
			w.nextOnReports = false
			w.mu.Unlock()
			unreserve()
			continue
		}
		if err == nil && status == 400 && hasFinal(batch) && refusesFinal(payload) {
			w.logf("jobclock does not take final on reports (an older server): final failures are reported as failures")
			w.mu.Lock()
			w.finalOnReports = false
			w.mu.Unlock()
			batch = withoutFinal(batch)
			continue
		}
		if err == nil && (status == 400 || status == 413) {
			unreserve()
			w.refused(batch, status, payload)
			return
		}
		if err == nil {
			w.logf("reports answered %d: %s; %d report(s) dropped (their jobs run again when their leases expire)", status, detail(payload), len(batch))
			return
		}
		unreserve()
		if w.isStopping() && attempt >= stoppingRetries {
			w.logf("reports failed (%v); %d report(s) dropped while stopping", err, len(batch))
			return
		}
		delay := w.backoff(attempt)
		w.logf("reports failed (%v); retrying %d in %s", err, len(batch), delay.Round(time.Millisecond))
		time.Sleep(delay)
	}
}

// accepted handles the answer to a batch: counts, lost leases, and the jobs leased with it, which
// take their slots before the reservation is given back (for a moment the free slots are counted
// short, never over).
func (w *Worker) accepted(batch []report, payload []byte, reserved *int) {
	var answer struct {
		Results []struct {
			Status int    `json:"status"`
			Detail string `json:"detail"`
		} `json:"results"`
		Jobs []*Job `json:"jobs"`
	}
	if err := json.Unmarshal(payload, &answer); err != nil {
		w.logf("reports: an answer that is not JSON: %v", err)
	}
	for i, res := range answer.Results {
		if i >= len(batch) {
			break
		}
		switch {
		case res.Status == 200 && batch[i].Outcome == "finished":
			w.finished.Add(1)
		case res.Status == 200:
			w.failed.Add(1)
		case res.Status == 409:
			w.lost.Add(1)
			w.logf("job %s: report not accepted, the lease was lost: %s", batch[i].ID, res.Detail)
		default:
			w.logf("job %s: report answered %d: %s", batch[i].ID, res.Status, res.Detail)
		}
	}
	w.mu.Lock()
	started := w.register(answer.Jobs)
	w.reserved -= *reserved
	*reserved = 0
	w.mu.Unlock()
	w.launch(started)
}

// refused: a batch jobclock refused whole (400, 413) is split in halves until the bad report is
// alone; that one is sent once more as a failure saying why, so its job does not wait for its
// lease to expire, and dropped if even that is refused.
func (w *Worker) refused(batch []report, status int, payload []byte) {
	if len(batch) > 1 {
		half := len(batch) / 2
		w.send(batch[:half], 0)
		w.send(batch[half:], 0)
		return
	}
	rep := batch[0]
	why := fmt.Sprintf("jobclock refused the report (%d): %s", status, detail(payload))
	if e, ok := rep.Error.(map[string]any); ok && e["kind"] == "report-refused" {
		w.logf("job %s: %s; dropped (the job runs again when its lease expires)", rep.ID, why)
		return
	}
	w.logf("job %s: %s; reporting it failed instead", rep.ID, why)
	if len(why) > 2000 {
		why = why[:2000]
	}
	w.send([]report{{ID: rep.ID, LeaseToken: rep.LeaseToken, Outcome: "failed", Error: map[string]any{"message": why, "kind": "report-refused"}}}, 0)
}

// ---------------------------------------------------------------------------------------------
// HTTP

// post sends JSON and returns the status and body. A connection error or a 502/503/504 is an
// *unavailable error. answered runs when the answer's head has arrived.
func (w *Worker) post(ctx context.Context, path string, body any, answered func()) (int, []byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.base+path, bytes.NewReader(data))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("accept", "application/json")
	if w.opts.Token != "" {
		req.Header.Set("authorization", "Bearer "+w.opts.Token)
	}
	res, err := w.client.Do(req)
	if err != nil {
		return 0, nil, &unavailable{fmt.Errorf("%s: %w", path, err)}
	}
	if answered != nil {
		answered()
	}
	payload, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return 0, nil, &unavailable{fmt.Errorf("%s: %w", path, err)}
	}
	if res.StatusCode == 502 || res.StatusCode == 503 || res.StatusCode == 504 {
		return 0, nil, &unavailable{fmt.Errorf("%s: %d %s", path, res.StatusCode, detail(payload))}
	}
	return res.StatusCode, payload, nil
}

// backoff is 100 ms doubling up to MaxBackoff, with jitter (half to all of it).
func (w *Worker) backoff(failures int) time.Duration {
	if failures > 20 {
		failures = 20
	}
	d := 100 * time.Millisecond << (failures - 1)
	if d > w.opts.MaxBackoff || d <= 0 {
		d = w.opts.MaxBackoff
	}
	return d/2 + time.Duration(rand.Int63n(int64(d/2)+1))
}

func durationMs(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

func detail(payload []byte) string {
	var p struct {
		Detail string `json:"detail"`
		Title  string `json:"title"`
	}
	if json.Unmarshal(payload, &p) == nil {
		if p.Detail != "" {
			return p.Detail
		}
		if p.Title != "" {
			return p.Title
		}
	}
	s := string(payload)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// refuses: a 400 whose errors name a path starting so (a field this server does not know).
func refuses(payload []byte, prefix string) bool {
	var p struct {
		Errors []struct {
			Path any `json:"path"`
		} `json:"errors"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return false
	}
	for _, e := range p.Errors {
		if s, ok := e.Path.(string); ok && strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// refusesFinal: a 400 naming a report's final field (/reports/<i>/final, or final as the unknown key).
func refusesFinal(payload []byte) bool {
	var p struct {
		Errors []struct {
			Path    any    `json:"path"`
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(payload, &p) != nil {
		return false
	}
	for _, e := range p.Errors {
		s, _ := e.Path.(string)
		if strings.HasSuffix(s, "/final") || strings.Contains(e.Message, `"final"`) {
			return true
		}
	}
	return false
}

func hasFinal(batch []report) bool {
	for _, r := range batch {
		if r.Final {
			return true
		}
	}
	return false
}

func withoutFinal(batch []report) []report {
	out := append([]report(nil), batch...)
	for i := range out {
		out[i].Final = false
	}
	return out
}

// errorJSON is a failed report's error: the message, what kind of failure, and why the job's
// context was cancelled when it was.
func errorJSON(err error, reason error) map[string]any {
	e := map[string]any{"message": err.Error()}
	var later *RetryLaterError
	var final *FinalError
	switch {
	case errors.As(err, &later):
		e["message"] = later.Err.Error()
		e["type"] = "RetryLater"
	case errors.As(err, &final):
		e["message"] = final.Err.Error()
		e["type"] = "Final"
	}
	switch reason {
	case ErrCancelled:
		e["reason"] = "cancelled"
	case ErrDeadline:
		e["reason"] = "deadline"
	case ErrLeaseLost:
		e["reason"] = "lease-lost"
	case ErrWorkerStopping:
		e["reason"] = "worker-stopping"
	}
	return e
}
