// A runnable example: start jobclock (`npm start`), then from clients/go: `go run ./example`.
//
// It enqueues a few mail.fetch jobs and runs a worker for them until Ctrl-C or SIGTERM, which
// stop it cleanly: running handlers are told (their context ends) and get a few seconds, the rest
// are given back. Environment: JOBCLOCK_URL (default http://127.0.0.1:3000) and JOBCLOCK_TOKEN (a
// token with the admin role when jobclock has tokens: the example enqueues as well as works).
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	jobclock "github.com/jobclock/jobclock/clients/go"
)

// errBusy is what the pretend mail server says now and then.
var errBusy = errors.New("the mail server is busy")

// list pretends to fetch the messages of a mailbox that arrived after since.
func list(ctx context.Context, box string, since int64) ([]string, error) {
	if rand.Intn(5) == 0 {
		return nil, errBusy
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(200 * time.Millisecond):
	}
	return []string{box + "-1", box + "-2", box + "-3"}, nil
}

// fetch is the worked example of docs/worker-libraries.md, the same in TypeScript and Python.
func fetch(ctx context.Context, job *jobclock.Job) (any, error) {
	var args struct {
		Box string `json:"box"`
	}
	if err := job.Decode(&args); err != nil || args.Box == "" {
		return nil, jobclock.Final(fmt.Errorf("args must be {\"box\": \"<name>\"}: %v", err)) // retrying cannot help
	}
	var state struct {
		Since int64 `json:"since"`
	}
	_, _ = job.DecodeTaskState(&state) // what the task's previous run saved (periodic tasks only)

	messages, err := list(ctx, args.Box, state.Since)
	if errors.Is(err, errBusy) {
		return nil, jobclock.RetryLater(5*time.Minute, err) // failed, queued again in 5 minutes
	}
	if err != nil {
		return nil, err // cancelled, past its deadline, or the worker stops: jobclock.StopReason(ctx) says which
	}
	n := 0
	for _, m := range messages {
		if ctx.Err() != nil {
			break // stop early, report what was done
		}
		_ = m // store it
		n++
		_ = job.Progress(map[string]any{"n": n}) // shown on the job now (a heartbeat)
	}
	return jobclock.Result{Value: map[string]any{"fetched": n}, State: map[string]any{"since": time.Now().UnixMilli()}}, nil
}

func main() {
	url := os.Getenv("JOBCLOCK_URL")
	if url == "" {
		url = "http://127.0.0.1:3000"
	}
	token := os.Getenv("JOBCLOCK_TOKEN")

	for _, box := range []string{"inbox", "archive", "spam"} {
		req, _ := http.NewRequest(http.MethodPost, url+"/jobs", bytes.NewBufferString(fmt.Sprintf(`{"type":"mail.fetch","args":{"box":%q}}`, box)))
		req.Header.Set("content-type", "application/json")
		if token != "" {
			req.Header.Set("authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatalf("enqueueing: %v (is jobclock running at %s?)", err, url)
		}
		res.Body.Close()
	}

	w := jobclock.New(jobclock.Options{URL: url, Token: token, Concurrency: 8, Lease: 30 * time.Second})
	w.Handle("mail.fetch", fetch)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Printf("worker %s: Ctrl-C to stop", w.ID())
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	log.Printf("stopped: %+v", w.Stats())
}
