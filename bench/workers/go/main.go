// No-op jobs through Go, for bench/measure/worker-libraries.ts: the clients/go Worker (`worker`)
// or the README loop written by hand with net/http (`loop`).
//
// Usage: workers MODE URL TOKEN MAX_JOBS DURATION_MS. It works until MAX_JOBS are finished,
// DURATION_MS has passed or the queue is empty, then prints {"done": jobs finished, "ms": time from
// its first request to the end of its work} as one JSON line. Both modes run 4 loops (goroutines)
// or 4 Workers of 100 slots in this one process, as b.loop and b.runner do in theirs.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	jobclock "github.com/jobclock/jobclock/clients/go"
)

var (
	url, token       string
	maxJobs          int64
	duration         time.Duration
	client           = &http.Client{}
	errEmpty         = fmt.Errorf("no content")
	handWrittenTypes = []string{"noop"}
)

func post(path string, body any, out any) error {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url+path, bytes.NewReader(data))
	req.Header.Set("content-type", "application/json")
	req.Header.Set("authorization", "Bearer "+token)
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode == 204 {
		return errEmpty
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("%s: %d %s", path, res.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// handLoop is the README loop: lease 100 {types, wait}, do each job, report them in one POST /jobs/reports.
func handLoop() (int64, time.Duration) {
	var done atomic.Int64
	var drainedAt atomic.Int64 // when the last job was reported: a loop still in a long-poll then is not work
	t0 := time.Now()
	end := t0.Add(duration)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for time.Now().Before(end) && done.Load() < maxJobs {
				var leased struct {
					Jobs []struct {
						ID         string `json:"id"`
						LeaseToken string `json:"leaseToken"`
					} `json:"jobs"`
				}
				err := post("/jobs/next", map[string]any{"worker": fmt.Sprintf("go-loop-%d", i), "types": handWrittenTypes, "limit": 100, "wait": "1s"}, &leased)
				if err == errEmpty {
					return
				}
				if err != nil {
					log.Fatal(err)
				}
				reports := make([]map[string]any, 0, len(leased.Jobs))
				for _, j := range leased.Jobs { // no-op work
					reports = append(reports, map[string]any{"id": j.ID, "leaseToken": j.LeaseToken, "outcome": "finished"})
				}
				var answer struct {
					Results []struct {
						Status int `json:"status"`
					} `json:"results"`
				}
				if err := post("/jobs/reports", map[string]any{"reports": reports}, &answer); err != nil {
					log.Fatal(err)
				}
				ok := int64(0)
				for _, r := range answer.Results {
					if r.Status == 200 {
						ok++
					}
				}
				if done.Add(ok) >= maxJobs {
					drainedAt.CompareAndSwap(0, int64(time.Since(t0)))
				}
			}
		}(i)
	}
	wg.Wait()
	if d := drainedAt.Load(); d > 0 {
		return done.Load(), time.Duration(d)
	}
	return done.Load(), time.Since(t0)
}

func library() (int64, time.Duration) {
	ctx, stop := context.WithCancel(context.Background())
	workers := make([]*jobclock.Worker, 4)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range workers {
		w := jobclock.New(jobclock.Options{URL: url, Token: token, Concurrency: 100, WorkerID: fmt.Sprintf("go-worker-%d", i),
			Wait: time.Second, Logf: func(string, ...any) {}})
		w.Handle("noop", func(context.Context, *jobclock.Job) (any, error) { return nil, nil })
		workers[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	finished := func() (n int64) {
		for _, w := range workers {
			n += w.Stats().Finished
		}
		return n
	}
	end := t0.Add(duration)
	var ms time.Duration
	last, idleSince := int64(-1), time.Now()
	for {
		n, now := finished(), time.Now()
		if n >= maxJobs {
			ms = now.Sub(t0) // drained: the clock stops at the last accepted report
			break
		}
		if n != last {
			last, idleSince = n, now
		} else if now.Sub(idleSince) > 1500*time.Millisecond { // nothing left to lease
			ms = idleSince.Sub(t0)
			break
		}
		if !now.Before(end) {
			break // time-boxed: the clock stops after the stop, as b.runner's does
		}
		time.Sleep(2 * time.Millisecond)
	}
	stop()
	wg.Wait()
	var sum jobclock.Stats
	for _, w := range workers {
		s := w.Stats()
		sum.Leased, sum.Finished, sum.GivenBack, sum.Lost = sum.Leased+s.Leased, sum.Finished+s.Finished, sum.GivenBack+s.GivenBack, sum.Lost+s.Lost
	}
	if sum.Leased != sum.Finished+sum.GivenBack {
		log.Printf("leased %d, finished %d, given back %d, lost %d: %d unaccounted for", sum.Leased, sum.Finished, sum.GivenBack, sum.Lost, sum.Leased-sum.Finished-sum.GivenBack)
	}
	if ms == 0 {
		ms = time.Since(t0)
	}
	return finished(), ms
}

func main() {
	mode := os.Args[1]
	url, token = os.Args[2], os.Args[3]
	maxJobs, _ = strconv.ParseInt(os.Args[4], 10, 64)
	ms, _ := strconv.Atoi(os.Args[5])
	duration = time.Duration(ms) * time.Millisecond
	var done int64
	var took time.Duration
	if mode == "loop" {
		done, took = handLoop()
	} else {
		done, took = library()
	}
	out, _ := json.Marshal(map[string]any{"done": done, "ms": float64(took.Microseconds()) / 1000})
	fmt.Println(string(out))
}
