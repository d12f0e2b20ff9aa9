package main

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// clusterDescription is cluster info's answer.
type clusterDescription struct {
	ClusterID   string          `json:"cluster_id"`
	Controller  int32           `json:"controller"`
	Brokers     []clusterBroker `json:"brokers"`
	Topics      int             `json:"topics"`
	APIVersions []apiVersion    `json:"api_versions,omitempty"`
}

type clusterBroker struct {
	NodeID int32   `json:"node_id"`
	Host   string  `json:"host"`
	Port   int32   `json:"port"`
	Rack   *string `json:"rack"`
}

type apiVersion struct {
	Broker int32  `json:"broker"`
	Key    int16  `json:"key"`
	Name   string `json:"name"`
	Min    int16  `json:"min_version"`
	Max    int16  `json:"max_version"`
}

func clusterInfo(c *cli, args []string) error {
	f := c.flags("[flags]", `
Show the cluster: its id, the controller, the brokers with their racks, and
how many topics it holds; --api-versions adds the Kafka APIs each broker
serves, with their version ranges (ApiVersions).`)
	withVersions := f.Bool("api-versions", false, "list the APIs and versions each broker serves")
	if err := f.parseNoArgs(args); err != nil {
		return err
	}
	out := clusterDescription{Brokers: []clusterBroker{}}
	err := c.withAdmin(func(ctx context.Context, adm *kadm.Client) error {
		md, err := adm.Metadata(ctx)
		if err != nil {
			return c.reachErr(err)
		}
		out.ClusterID, out.Controller = md.Cluster, md.Controller
		for _, b := range md.Brokers {
			out.Brokers = append(out.Brokers, clusterBroker{NodeID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack})
		}
		sort.Slice(out.Brokers, func(i, j int) bool { return out.Brokers[i].NodeID < out.Brokers[j].NodeID })
		for _, t := range md.Topics {
			if !t.IsInternal {
				out.Topics++
			}
		}
		if !*withVersions {
			return nil
		}
		versions, err := adm.ApiVersions(ctx)
		if err != nil {
			return c.reachErr(err)
		}
		for _, b := range versions.Sorted() {
			if b.Err != nil {
				return fmt.Errorf("broker %d: ApiVersions: %w", b.NodeID, b.Err)
			}
			b.EachKeySorted(func(key, min, max int16) {
				out.APIVersions = append(out.APIVersions, apiVersion{Broker: b.NodeID, Key: key, Name: kmsg.NameForKey(key), Min: min, Max: max})
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if c.g.json {
		return printJSON(c.stdout, out)
	}
	tb := newTable(c.stdout)
	tb.row("CLUSTER-ID", out.ClusterID)
	tb.row("CONTROLLER", out.Controller)
	tb.row("TOPICS", out.Topics)
	tb.flush()
	fmt.Fprintln(c.stdout, "\nBROKERS")
	tb = newTable(c.stdout, "ID", "HOST", "PORT", "RACK")
	for _, b := range out.Brokers {
		rack := "-"
		if b.Rack != nil && *b.Rack != "" {
			rack = *b.Rack
		}
		controller := ""
		if b.NodeID == out.Controller {
			controller = "*"
		}
		tb.row(fmt.Sprint(b.NodeID, controller), b.Host, b.Port, rack)
	}
	tb.flush()
	if *withVersions {
		fmt.Fprintln(c.stdout, "\nAPI VERSIONS")
		tb = newTable(c.stdout, "BROKER", "KEY", "API", "MIN", "MAX")
		for _, v := range out.APIVersions {
			tb.row(v.Broker, v.Key, v.Name, v.Min, v.Max)
		}
		tb.flush()
	}
	return nil
}
