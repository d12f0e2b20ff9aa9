package e2e

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestDockerComposeConfig validates docker-compose.yml with the docker
// client's own parser where the compose plugin is installed.
func TestDockerComposeConfig(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker client")
	}
	if err := exec.Command("docker", "compose", "version").Run(); err != nil {
		t.Skip("docker client without the compose plugin")
	}
	file, err := filepath.Abs("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("docker", "compose", "-f", file, "config", "--quiet").CombinedOutput()
	if err != nil {
		t.Fatalf("docker compose config: %v\n%s", err, out)
	}
}

// TestDevClusterScriptSyntax checks dev/cluster.sh parses; the script
// itself is exercised by hand and in the README's walkthrough, since it
// builds binaries and installs MinIO and nats-server.
func TestDevClusterScriptSyntax(t *testing.T) {
	for _, script := range []string{"../dev/cluster.sh", "../scripts/test.sh", "../scripts/bench-lib.sh", "../scripts/bench-produce.sh", "../scripts/bench-read.sh"} {
		if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", script, err, out)
		}
	}
}
