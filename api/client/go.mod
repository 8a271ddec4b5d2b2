module roomhub/api/client

go 1.26.0
