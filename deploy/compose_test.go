package deploy

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// TestCompose loads docker-compose.yml with compose-go, the Compose
// specification's reference loader, which validates it against the
// specification's JSON schema (schema/compose-spec.json of compose-go)
// before decoding it into typed services; then checks that it runs floe's
// image as that image expects.
func TestCompose(t *testing.T) {
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "docker-compose.yml")}},
		Environment: types.Mapping{},
	}
	p, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) {
		o.SetProjectName("floe", true)
	})
	if err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}

	bins := imageBinaries(t, parseDockerfile(t))
	var brokers, coordinators, nats []string
	kafkaPorts := map[string]string{}
	nodeIDs := map[string]string{}
	for name, s := range p.Services {
		if strings.HasPrefix(s.Image, "nats:") {
			nats = append(nats, name)
		}
		if s.Image != "floe:dev" {
			continue
		}
		if s.Build == nil || s.Build.Context != dir {
			t.Errorf("%s: image floe:dev not built from the repository's Dockerfile (build %+v)", name, s.Build)
		}
		if len(s.Entrypoint) != 1 {
			t.Errorf("%s: entrypoint %v, want one of the image's binaries", name, s.Entrypoint)
			continue
		}
		bin, ok := strings.CutPrefix(s.Entrypoint[0], "/usr/local/bin/")
		if !ok || !slices.Contains(bins, bin) {
			t.Errorf("%s: entrypoint %s is not a binary the Dockerfile builds (%v)", name, s.Entrypoint[0], bins)
		}
		args := argMap(s.Command)
		if _, ok := args["--data-dir"]; ok {
			t.Errorf("%s: --data-dir overrides the image's FLOE_DATA_DIR, the one directory its user may write", name)
		}
		// The image's HEALTHCHECK asks 8080 (broker) and 8090
		// (coordinator) unless FLOE_HTTP_ADDR says otherwise.
		wantHTTP := map[string]string{"broker": "8080", "coordinator": "8090"}[bin]
		if _, port, _ := net.SplitHostPort(args["--http-addr"]); port != wantHTTP && s.Environment["FLOE_HTTP_ADDR"] == nil {
			t.Errorf("%s: --http-addr %q: the image's HEALTHCHECK looks on %s", name, args["--http-addr"], wantHTTP)
		}
		switch bin {
		case "broker":
			brokers = append(brokers, name)
			if prev, dup := nodeIDs[args["--node-id"]]; dup {
				t.Errorf("%s and %s share --node-id %s", name, prev, args["--node-id"])
			}
			nodeIDs[args["--node-id"]] = name
			_, listen, _ := net.SplitHostPort(args["--kafka-addr"])
			_, adv, err := net.SplitHostPort(args["--advertised-addr"])
			if err != nil {
				t.Errorf("%s: --advertised-addr %q: %v", name, args["--advertised-addr"], err)
			}
			// Clients on the host reach the advertised port: it must be
			// published, to the listener.
			published := false
			for _, port := range s.Ports {
				if port.Published == adv && port.Target == parsePort(listen) {
					published = true
				}
			}
			if !published {
				t.Errorf("%s: advertises port %s, which is not published to its listener %s (%+v)", name, adv, listen, s.Ports)
			}
			kafkaPorts[adv] = name
			for dep, d := range s.DependsOn {
				if strings.HasPrefix(dep, "coordinator") && d.Condition != types.ServiceConditionHealthy {
					t.Errorf("%s: depends on %s %s, want service_healthy", name, dep, d.Condition)
				}
			}
		case "coordinator":
			coordinators = append(coordinators, name)
			if args["--replicas"] != "3" {
				t.Errorf("%s: --replicas %q, want 3 (the NATS cluster's size)", name, args["--replicas"])
			}
			if args["--coordinator-id"] != name {
				t.Errorf("%s: --coordinator-id %q, want its service name", name, args["--coordinator-id"])
			}
			if len(s.Volumes) == 0 || s.Volumes[0].Target != "/var/lib/floe" {
				t.Errorf("%s: no volume on /var/lib/floe for its state", name)
			}
		}
	}
	if len(brokers) < 2 || len(coordinators) < 2 || len(nats) != 3 {
		t.Errorf("brokers %v, coordinators %v, NATS %v: want several brokers, two coordinators, three NATS nodes", brokers, coordinators, nats)
	}
	if len(kafkaPorts) != len(brokers) {
		t.Errorf("brokers share advertised ports: %v", kafkaPorts)
	}
}

// argMap returns a command's --flag value pairs (and --flag=value).
func argMap(cmd []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(cmd); i++ {
		if k, v, ok := strings.Cut(cmd[i], "="); ok && strings.HasPrefix(k, "--") {
			out[k] = v
		} else if strings.HasPrefix(cmd[i], "--") && i+1 < len(cmd) {
			out[cmd[i]] = cmd[i+1]
			i++
		}
	}
	return out
}

// parsePort reads a port number, 0 when s is not one.
func parsePort(s string) uint32 {
	n, _ := strconv.ParseUint(s, 10, 32)
	return uint32(n)
}

// TestComposeSchemaRejects checks that the loader TestCompose relies on
// validates against the schema: a misspelt key fails.
func TestComposeSchemaRejects(t *testing.T) {
	dir := t.TempDir()
	details := types.ConfigDetails{
		WorkingDir: dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yml"),
			Content: []byte("services:\n  broker:\n    image: floe:dev\n    portz: [\"9092:9092\"]\n")}},
		Environment: types.Mapping{},
	}
	_, err := loader.LoadWithContext(context.Background(), details, func(o *loader.Options) { o.SetProjectName("x", true) })
	if err == nil || !strings.Contains(err.Error(), "portz") {
		t.Errorf("a service with a misspelt key loaded: %v", err)
	}
}
