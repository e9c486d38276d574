package jobclock

import (
	"errors"
	"fmt"
	"time"
)

// Why a job's context was cancelled: StopReason(ctx) returns one of these.
var (
	// ErrCancelled: the job was cancelled (a heartbeat answered cancel before its deadline).
	ErrCancelled = errors.New("jobclock: the job was cancelled")
	// ErrDeadline: the job's deadline (startedAt + timebox) passed. A report inside the grace
	// (10% of the timebox, at least 1 s) is still accepted: return what you have.
	ErrDeadline = errors.New("jobclock: the job passed its deadline")
	// ErrLeaseLost: the lease expired or the job is gone; what the handler returns is not reported.
	ErrLeaseLost = errors.New("jobclock: the job's lease was lost")
	// ErrWorkerStopping: the worker is stopping. Return soon: what you return is reported; a
	// handler that returns ctx.Err() (or this error) has its job given back, the attempt not
	// counted, and one still running after Options.StopTimeout is given back as well.
	ErrWorkerStopping = errors.New("jobclock: the worker is stopping")
)

// RetryLaterError reports the job failed and asks jobclock to queue it again after After (if
// attempts remain). Make one with RetryLater.
type RetryLaterError struct {
	After time.Duration
	Err   error
}

// RetryLater returns an error a handler returns to have its job retried after d.
func RetryLater(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("retry later")
	}
	return &RetryLaterError{After: d, Err: err}
}

func (e *RetryLaterError) Error() string {
	return fmt.Sprintf("retry in %s: %v", e.After, e.Err)
}

func (e *RetryLaterError) Unwrap() error { return e.Err }

// FinalError reports the job failed for good, whatever attempts remain. Make one with Final.
// A server without final failures (before the one-shot outcomes) treats it as a plain failure.
type FinalError struct{ Err error }

// Final returns an error a handler returns when retrying cannot help (bad arguments, say).
func Final(err error) error {
	if err == nil {
		err = errors.New("failed for good")
	}
	return &FinalError{Err: err}
}

func (e *FinalError) Error() string { return "final: " + e.Err.Error() }

func (e *FinalError) Unwrap() error { return e.Err }

// SnoozeError gives the job back without counting the attempt ("not now, try in 10 minutes"):
// POST /jobs/{id}/release with retryIn After, and the state saved with SaveState as the job's
// checkpoint. Make one with Snooze.
type SnoozeError struct {
	After time.Duration
	Err   error
}

// Snooze returns an error a handler returns to have its job run again after d, the attempt not counted.
func Snooze(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("snoozed")
	}
	return &SnoozeError{After: d, Err: err}
}

func (e *SnoozeError) Error() string { return fmt.Sprintf("snooze for %s: %v", e.After, e.Err) }

func (e *SnoozeError) Unwrap() error { return e.Err }

// HTTPError is an answer the worker cannot fix by retrying (400, 401, 403, ...).
type HTTPError struct {
	Status int
	What   string
	Detail string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("jobclock: %s answered %d: %s", e.What, e.Status, e.Detail)
}

// unavailable is a 502/503/504 or a connection error: worth retrying after a back-off.
type unavailable struct{ err error }

func (e *unavailable) Error() string { return e.err.Error() }

func (e *unavailable) Unwrap() error { return e.err }
