package jobclock

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Job is a leased job, as POST /jobs/next hands it out.
type Job struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	Group          *string         `json:"group"`
	Args           json.RawMessage `json:"args"`
	Subject        *string         `json:"subject"`
	Priority       int             `json:"priority"`
	Attempts       int             `json:"attempts"`
	MaxAttempts    int             `json:"maxAttempts"`
	PeriodicTaskID *string         `json:"periodicTaskId"`
	// TaskState is what the previous run of the job's periodic task saved (null for one-shot jobs).
	TaskState json.RawMessage `json:"taskState"`
	// After lists the jobs this one ran after (empty for a job without dependencies).
	After []string `json:"after"`
	// Dependencies says how each job of After ended, with its result (nil without dependencies).
	Dependencies []Dependency `json:"dependencies"`
	// Checkpoint is what an earlier attempt of this one-shot job saved with SaveState (null if none).
	Checkpoint     json.RawMessage `json:"checkpoint"`
	LeaseToken     string          `json:"leaseToken"`
	LeaseExpiresAt *time.Time      `json:"leaseExpiresAt"`
	Deadline       *time.Time      `json:"deadline"`
	StartedAt      *time.Time      `json:"startedAt"`
	CreatedAt      *time.Time      `json:"createdAt"`

	run *running
}

// Dependency is a job that a leased job ran after, as the lease hands it down.
type Dependency struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// State is finished, or with onDependencyFailure "run" also failed, dropped or cancelled.
	State  string          `json:"state"`
	Result json.RawMessage `json:"result"`
}

// Decode unmarshals the job's args into v.
func (j *Job) Decode(v any) error {
	if len(j.Args) == 0 {
		return json.Unmarshal([]byte("null"), v)
	}
	return json.Unmarshal(j.Args, v)
}

// DecodeCheckpoint unmarshals what an earlier attempt of this one-shot job saved into v; false when
// there was none.
func (j *Job) DecodeCheckpoint(v any) (bool, error) {
	if len(j.Checkpoint) == 0 || string(j.Checkpoint) == "null" {
		return false, nil
	}
	return true, json.Unmarshal(j.Checkpoint, v)
}

// DecodeTaskState unmarshals the state the task's previous run saved into v; false when there was none.
func (j *Job) DecodeTaskState(v any) (bool, error) {
	if len(j.TaskState) == 0 || string(j.TaskState) == "null" {
		return false, nil
	}
	return true, json.Unmarshal(j.TaskState, v)
}

// Progress shows progress (any JSON) on the job now, with a heartbeat (sent even when the job's
// context is cancelled: a handler told to stop may still record where it got).
func (j *Job) Progress(progress any) error {
	if j.run == nil {
		return nil
	}
	raw, err := json.Marshal(progress)
	if err != nil {
		return err
	}
	j.run.mu.Lock()
	j.run.progress = raw
	j.run.mu.Unlock()
	return j.run.worker.beat(j.run)
}

// SaveState saves state (any JSON) for the next run of the job's periodic task now, with a
// heartbeat, and again with the report: it arrives as the next job's TaskState.
func (j *Job) SaveState(state any) error {
	if j.run == nil {
		return nil
	}
	raw, err := json.Marshal(state)
	if err != nil {
		return err
	}
	j.run.mu.Lock()
	j.run.state = raw
	j.run.mu.Unlock()
	return j.run.worker.beat(j.run)
}

// Result is a handler's return value that carries the task state for the next run besides the
// job's result. Any other value is the result as it is (a map with a "state" key included).
type Result struct {
	Value any
	State any
}

// running is a job whose handler runs (or ran, its report not yet queued).
type running struct {
	worker *Worker
	job    *Job
	ctx    context.Context // nil for a job leased while stopping
	cancel context.CancelFunc

	mu       sync.Mutex
	reason   error // why its context was cancelled
	progress json.RawMessage
	state    json.RawMessage
	beatAt   time.Time
	beating  bool
	settled  bool // lease lost or given back: no report
	returned bool // the handler returned
	timer    *time.Timer
}

// stop cancels the job's context with a reason, once; later reasons do not replace the first.
func (r *running) stop(reason error) {
	r.mu.Lock()
	if r.reason == nil {
		r.reason = reason
	}
	r.mu.Unlock()
	if r.cancel != nil {
		r.cancel()
	}
}

type reasonKey struct{}

// StopReason says why a handler's context was cancelled: ErrCancelled, ErrDeadline,
// ErrLeaseLost or ErrWorkerStopping; nil while it runs on.
func StopReason(ctx context.Context) error {
	r, _ := ctx.Value(reasonKey{}).(*running)
	if r == nil {
		return nil
	}
	r.mu.Lock()
	reason := r.reason
	r.mu.Unlock()
	if reason == nil && ctx.Err() == context.DeadlineExceeded {
		return ErrDeadline
	}
	return reason
}
