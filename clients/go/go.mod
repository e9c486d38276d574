module github.com/jobclock/jobclock/clients/go

go 1.19
