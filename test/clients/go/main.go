// Drives the Go worker (clients/go) for test/clients/go-worker.test.ts.
//
// Usage: driver SCENARIO URL TOKEN OUT [N]. Every line of OUT is a JSON event the test reads
// (`ready` once the worker runs, `ran` for each handler execution, ...). The worker's log goes to
// stderr. SIGTERM stops the worker as a deployment would: Run's context ends.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	jobclock "github.com/jobclock/jobclock/clients/go"
)

var (
	outMu sync.Mutex
	out   *os.File
	ran   int
)

func emit(kind string, fields map[string]any) {
	outMu.Lock()
	defer outMu.Unlock()
	if fields == nil {
		fields = map[string]any{}
	}
	fields["event"] = kind
	if kind == "ran" {
		ran++
	}
	line, _ := json.Marshal(fields)
	_, _ = out.Write(append(line, '\n'))
}

func ranCount() int {
	outMu.Lock()
	defer outMu.Unlock()
	return ran
}

func reason(ctx context.Context) string {
	switch jobclock.StopReason(ctx) {
	case jobclock.ErrCancelled:
		return "cancel"
	case jobclock.ErrDeadline:
		return "deadline"
	case jobclock.ErrLeaseLost:
		return "lease-lost"
	case jobclock.ErrWorkerStopping:
		return "stopping"
	}
	return ""
}

func main() {
	scenario, url, token, outPath := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	var err error
	out, err = os.OpenFile(outPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		log.Fatal(err)
	}
	workerID := fmt.Sprintf("go-%s-%d", scenario, os.Getpid())
	lease := map[string]time.Duration{"long": time.Second, "cancel": 3 * time.Second}[scenario]
	w := jobclock.New(jobclock.Options{
		URL: url, Token: token, Concurrency: 8, Lease: lease, WorkerID: workerID, Wait: 5 * time.Second,
		StopTimeout: map[bool]time.Duration{true: 1500 * time.Millisecond, false: 5 * time.Second}[scenario == "stop"],
		Logf:        func(format string, args ...any) { log.Printf(format, args...) },
	})

	count := func(ctx context.Context, job *jobclock.Job) (any, error) {
		emit("ran", map[string]any{"id": job.ID, "worker": workerID})
		var n int
		fmt.Sscan(job.ID, &n)
		time.Sleep(time.Duration(2*(n%5)) * time.Millisecond)
		return map[string]any{"by": workerID}, nil
	}
	cancellable := func(ctx context.Context, job *jobclock.Job) (any, error) {
		emit("ran", map[string]any{"id": job.ID})
		select {
		case <-ctx.Done():
		case <-time.After(15 * time.Second):
			return map[string]any{"cancelled": false}, nil
		}
		emit("cancelled", map[string]any{"id": job.ID, "reason": reason(ctx)})
		return map[string]any{"cancelled": true, "reason": reason(ctx)}, nil
	}
	handlers := map[string]map[string]jobclock.HandlerFunc{
		"count": {"go.count": count},
		"limited": {"go.limited": func(ctx context.Context, job *jobclock.Job) (any, error) {
			emit("ran", map[string]any{"id": job.ID})
			time.Sleep(10 * time.Millisecond)
			return nil, nil
		}},
		"long": {"go.long": func(ctx context.Context, job *jobclock.Job) (any, error) {
			var args struct{ Seconds float64 }
			_ = job.Decode(&args)
			emit("ran", map[string]any{"id": job.ID})
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("cancelled: %s", reason(ctx))
			case <-time.After(time.Duration(args.Seconds * float64(time.Second))):
			}
			return map[string]any{"slept": args.Seconds}, nil
		}},
		"cancel": {"go.cancel": cancellable, "go.deadline": cancellable},
		"graph": {
			"go.page": func(ctx context.Context, job *jobclock.Job) (any, error) {
				var args struct{ Page int }
				_ = job.Decode(&args)
				emit("ran", map[string]any{"id": job.ID})
				return map[string]any{"url": fmt.Sprintf("s3://pdf/%d", args.Page)}, nil
			},
			"go.merge": func(ctx context.Context, job *jobclock.Job) (any, error) {
				emit("ran", map[string]any{"id": job.ID, "after": job.After})
				urls := []string{}
				for _, d := range job.Dependencies {
					var r struct{ URL string }
					if err := json.Unmarshal(d.Result, &r); err != nil {
						return nil, err
					}
					urls = append(urls, d.State+" "+r.URL)
				}
				return map[string]any{"urls": urls}, nil
			},
		},
		"periodic": {"go.periodic": func(ctx context.Context, job *jobclock.Job) (any, error) {
			var before *struct {
				Runs int `json:"runs"`
			}
			_ = json.Unmarshal(job.TaskState, &before)
			n := 1
			if before != nil {
				n = before.Runs + 1
			}
			emit("ran", map[string]any{"id": job.ID, "taskState": before})
			if n%2 == 1 {
				return map[string]any{"run": n}, job.SaveState(map[string]any{"runs": n}) // one way: SaveState
			}
			return jobclock.Result{Value: map[string]any{"run": n}, State: map[string]any{"runs": n}}, nil // the other: Result
		}},
		"stop": {
			"go.quick": func(ctx context.Context, job *jobclock.Job) (any, error) {
				emit("ran", map[string]any{"id": job.ID})
				select { // until the stop says so
				case <-ctx.Done():
				case <-time.After(10 * time.Second):
				}
				time.Sleep(300 * time.Millisecond) // wrapping up, inside the stop timeout
				return map[string]any{"quick": true, "reason": reason(ctx)}, nil
			},
			"go.stubborn": func(ctx context.Context, job *jobclock.Job) (any, error) {
				emit("ran", map[string]any{"id": job.ID})
				time.Sleep(30 * time.Second) // ignores ctx: the stop has to give its lease back
				return map[string]any{"stubborn": true}, nil
			},
		},
		"retry": {
			"go.busy": func(ctx context.Context, job *jobclock.Job) (any, error) {
				emit("ran", map[string]any{"id": job.ID})
				return nil, jobclock.RetryLater(30*time.Second, errors.New("the upstream is busy"))
			},
			"go.final": func(ctx context.Context, job *jobclock.Job) (any, error) {
				emit("ran", map[string]any{"id": job.ID})
				return nil, jobclock.Final(errors.New("the arguments can never work"))
			},
			"go.deep": func(ctx context.Context, job *jobclock.Job) (any, error) {
				emit("ran", map[string]any{"id": job.ID})
				// deeper than the 32 levels jobclock accepts: the report is refused
				return json.RawMessage(strings.Repeat(`{"in":`, 40) + "{}" + strings.Repeat("}", 40)), nil
			},
			"go.count": count,
		},
	}[scenario]
	if handlers == nil {
		log.Fatalf("unknown scenario %q", scenario)
	}
	for t, h := range handlers {
		w.Handle(t, h)
	}

	if scenario == "stop" {
		var want int
		fmt.Sscan(os.Args[5], &want)
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = w.Run(ctx); close(done) }()
		emit("ready", nil)
		end := time.Now().Add(15 * time.Second)
		for time.Now().Before(end) && ranCount() < want {
			time.Sleep(50 * time.Millisecond)
		}
		t0 := time.Now()
		stop()
		<-done
		emit("stopped", map[string]any{"seconds": time.Since(t0).Seconds(), "stats": w.Stats()})
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	emit("ready", nil)
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	emit("stopped", map[string]any{"stats": w.Stats()})
}
