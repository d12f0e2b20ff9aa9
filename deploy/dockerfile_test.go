package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// instruction is one Dockerfile instruction: its keyword (lower case), its
// flags (--from=build), its arguments, and whether they were in JSON (exec)
// form.
type instruction struct {
	cmd   string
	flags []string
	args  []string
	json  bool
	line  int
}

// parseDockerfile parses the repository's Dockerfile with BuildKit's parser
// into its stages' instructions, failing on any parser warning.
func parseDockerfile(t *testing.T) [][]instruction {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	for _, w := range res.Warnings {
		t.Errorf("Dockerfile: %s", w.Short)
	}
	var stages [][]instruction
	for _, n := range res.AST.Children {
		in := instruction{cmd: strings.ToLower(n.Value), flags: n.Flags, json: n.Attributes["json"], line: n.StartLine}
		for a := n.Next; a != nil; a = a.Next {
			in.args = append(in.args, a.Value)
			if a.Attributes["json"] {
				in.json = true
			}
		}
		if in.cmd == "from" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			if in.cmd != "arg" {
				t.Fatalf("Dockerfile line %d: %s before the first FROM", in.line, in.cmd)
			}
			continue
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	return stages
}

// imageBinaries returns the binaries the final stage copies into
// /usr/local/bin: the ./cmd/<name> packages the build stage builds.
func imageBinaries(t *testing.T, stages [][]instruction) []string {
	t.Helper()
	var bins []string
	for _, in := range stages[0] {
		if in.cmd != "run" {
			continue
		}
		for _, w := range strings.Fields(strings.Join(in.args, " ")) {
			if name, ok := strings.CutPrefix(w, "./cmd/"); ok {
				bins = append(bins, name)
			}
		}
	}
	return bins
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	if len(stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]
	if !slices.Contains(build[0].args, "AS") && !slices.Contains(build[0].args, "as") {
		t.Errorf("the build stage is not named: FROM %v", build[0].args)
	}

	// Every role and the CLI, from this repository's commands.
	bins := imageBinaries(t, stages)
	for _, want := range []string{"broker", "coordinator", "floe", "floe-healthcheck"} {
		if !slices.Contains(bins, want) {
			t.Errorf("the build stage does not build ./cmd/%s (builds %v)", want, bins)
		}
	}
	for _, b := range bins {
		if _, err := os.Stat(filepath.Join("..", "cmd", b, "main.go")); err != nil {
			t.Errorf("the Dockerfile builds ./cmd/%s: %v", b, err)
		}
	}
	if !strings.Contains(strings.Join(flatten(build), " "), "CGO_ENABLED=0") {
		t.Errorf("the binaries are not built static (CGO_ENABLED=0) for a distroless image")
	}

	byCmd := map[string][]instruction{}
	for _, in := range final {
		byCmd[in.cmd] = append(byCmd[in.cmd], in)
	}
	from := final[0].args[0]
	if !strings.Contains(from, "distroless") {
		t.Errorf("runtime stage FROM %s, want a distroless image", from)
	}
	copied := false
	for _, in := range byCmd["copy"] {
		if slices.Contains(in.flags, "--from=build") && slices.Contains(in.args, "/usr/local/bin/") {
			copied = true
		}
	}
	if !copied {
		t.Errorf("the runtime stage does not COPY --from=build the binaries into /usr/local/bin/")
	}
	users := byCmd["user"]
	if len(users) == 0 {
		t.Fatalf("no USER: the image would run as root")
	}
	if u := users[len(users)-1].args[0]; u == "root" || u == "0" || strings.HasPrefix(u, "0:") {
		t.Errorf("USER %s is root", u)
	}
	ep := byCmd["entrypoint"]
	if len(ep) != 1 || !ep[0].json || !slices.Equal(ep[0].args, []string{"/usr/local/bin/broker"}) {
		t.Errorf("ENTRYPOINT %+v, want the broker in exec form", ep)
	}
	hc := byCmd["healthcheck"]
	if len(hc) != 1 {
		t.Fatalf("%d HEALTHCHECKs, want 1", len(hc))
	}
	if got := strings.Join(hc[0].args, " "); !strings.Contains(got, "/usr/local/bin/floe-healthcheck") || !hc[0].json {
		t.Errorf("HEALTHCHECK %q (json %v), want floe-healthcheck in exec form (the image has no shell)", got, hc[0].json)
	}
	env := strings.Join(flatten(byCmd["env"]), " ")
	if !strings.Contains(env, "FLOE_DATA_DIR") {
		t.Errorf("no FLOE_DATA_DIR: the default ./data is not writable by the image's user")
	}
	for _, port := range []string{"9092", "8080", "8090"} {
		if !slices.Contains(flatten(byCmd["expose"]), port) {
			t.Errorf("port %s is not exposed", port)
		}
	}
}

func flatten(ins []instruction) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.args...)
	}
	return out
}
