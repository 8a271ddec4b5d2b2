# syntax=docker/dockerfile:1
# Build: a static binary (no cgo), so the final image needs no libc.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
# The backends' client is a module of its own the hub's tests replace in:
# its go.mod is part of the module graph go mod download reads.
COPY api/client/go.mod api/client/
RUN go mod download
COPY . .
# grpcnotrace: the OTLP exporters import gRPC, whose golang.org/x/net/trace
# (debug pages roomhub never serves) keeps every exported method of every
# type alive through html/template; without it the binary is 2.4x larger.
RUN CGO_ENABLED=0 go build -tags grpcnotrace -trimpath -ldflags="-s -w" -o /out/roomhub .

# Run: distroless static, non-root. The HEALTHCHECK uses the binary itself
# (`roomhub healthcheck`), as the image has no shell or curl.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/roomhub /roomhub
USER nonroot:nonroot
ENV SERVER_PORT=8083 HUB_ENV=production
EXPOSE 8083
HEALTHCHECK --interval=10s --timeout=4s --start-period=5s --retries=3 CMD ["/roomhub", "healthcheck"]
ENTRYPOINT ["/roomhub"]
