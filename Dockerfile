# floe's broker and coordinator binaries, for docker-compose.yml.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /out/broker ./cmd/broker && CGO_ENABLED=0 go build -o /out/coordinator ./cmd/coordinator

FROM gcr.io/distroless/static-debian12
COPY --from=build /out/broker /out/coordinator /usr/local/bin/
ENTRYPOINT ["/usr/local/bin/broker"]
