package broker

import (
	"context"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/floe-io/floe/coordapi"
)

// ListTransactions: v0-v2 (flexible). v1 adds the duration filter (only
// transactions running longer than it), v2 a transactional id pattern (a
// regular expression). Unknown state names are listed back in
// UnknownStateFilters, as Kafka does; only the ids the principal may
// DESCRIBE are listed.
func init() { register(kmsg.ListTransactions, 0, 2, (*Broker).handleListTransactions) }

func (b *Broker) handleListTransactions(ctx context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ListTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var states []coordapi.TxnState
	for _, name := range req.StateFilters {
		if s, ok := coordapi.TxnStateNamed(name); ok {
			states = append(states, s)
		} else {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, name)
		}
	}
	if len(req.StateFilters) > 0 && len(states) == 0 {
		return resp, nil // only unknown states: nothing matches
	}
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile(*req.TransactionalIDPattern)
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		pattern = re
	}
	ls, err := b.coord.ListTransactions(ctx, states, req.ProducerIDFilters)
	if err != nil {
		resp.ErrorCode = txnErrorCode(err, 0, 0)
		return resp, nil
	}
	var started map[string]int64
	if req.DurationFilterMillis >= 0 && req.Version >= 1 {
		// The duration filter needs each transaction's start.
		ids := make([]string, len(ls))
		for i, l := range ls {
			ids[i] = l.TransactionalID
		}
		descs, err := b.coord.DescribeTransactions(ctx, ids)
		if err != nil {
			resp.ErrorCode = txnErrorCode(err, 0, 0)
			return resp, nil
		}
		started = map[string]int64{}
		for _, d := range descs {
			started[d.TransactionalID] = d.StartMs
		}
	}
	nowMs := time.Now().UnixMilli()
	for _, l := range ls {
		if pattern != nil && !pattern.MatchString(l.TransactionalID) {
			continue
		}
		if started != nil {
			s := started[l.TransactionalID]
			if s < 0 || nowMs-s < req.DurationFilterMillis {
				continue
			}
		}
		if !b.authorizedQuiet(r, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, l.TransactionalID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = l.TransactionalID, l.ProducerID, l.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
