module jobclock.bench/workers

go 1.19

require github.com/jobclock/jobclock/clients/go v0.0.0

replace github.com/jobclock/jobclock/clients/go => ../../../clients/go
