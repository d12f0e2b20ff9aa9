package deploy

import (
	_ "github.com/compose-spec/compose-go/v2/loader"
	_ "github.com/moby/buildkit/frontend/dockerfile/parser"
	_ "github.com/prometheus/prometheus/model/rulefmt"
	_ "github.com/prometheus/prometheus/promql/parser"
)
