package main

import (
	"fmt"

	"github.com/IBM/sarama"
)

// txnCommitAbort: a transactional producer commits 5 records, aborts 3,
// then commits 2; read_committed reads the 7 committed ones, in order,
// read_uncommitted all 10; both skip the transaction markers.
func txnCommitAbort(e *env) error {
	topic := e.topic("txn")
	if err := createTopic(e, topic, 1); err != nil {
		return err
	}
	cfg := idempotent(config(sarama.DefaultVersion))
	cfg.Producer.Transaction.ID = e.topic("txn-id")
	p, err := sarama.NewSyncProducer(e.bootstrap, cfg)
	if err != nil {
		return fmt.Errorf("transactional producer: %w", err)
	}
	defer p.Close()
	var committed []string
	for _, tx := range []struct {
		n      int
		commit bool
	}{{5, true}, {3, false}, {2, true}} {
		if err := p.BeginTxn(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		msgs := keyed(topic, tx.n, fmt.Sprintf("txn-%v", tx.commit))
		if err := p.SendMessages(msgs); err != nil {
			return fmt.Errorf("send in a transaction: %w", err)
		}
		if tx.commit {
			if err := p.CommitTxn(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
			for _, m := range msgs {
				v, _ := m.Value.Encode()
				committed = append(committed, string(v))
			}
		} else if err := p.AbortTxn(); err != nil {
			return fmt.Errorf("abort: %w", err)
		}
	}

	rc := config(sarama.DefaultVersion)
	rc.Consumer.IsolationLevel = sarama.ReadCommitted
	got, err := consume(e, rc, topic, 0, sarama.OffsetOldest, len(committed))
	if err != nil {
		return fmt.Errorf("read_committed: %w", err)
	}
	// Offsets: the first transaction's 0-4, the third's 10-11.
	committedAt := []int64{0, 1, 2, 3, 4, 10, 11}
	for i, m := range got {
		if string(m.Value) != committed[i] || m.Offset != committedAt[i] {
			return fmt.Errorf("read_committed record %d at offset %d is %q, want %q at %d", i, m.Offset, m.Value, committed[i], committedAt[i])
		}
	}
	all, err := consume(e, config(sarama.DefaultVersion), topic, 0, sarama.OffsetOldest, 10)
	if err != nil {
		return fmt.Errorf("read_uncommitted: %w", err)
	}
	// Offsets: 0-4, a marker at 5, 6-8, a marker at 9, 10-11, a marker at 12.
	want := []int64{0, 1, 2, 3, 4, 6, 7, 8, 10, 11}
	for i, m := range all {
		if m.Offset != want[i] {
			return fmt.Errorf("read_uncommitted record %d at offset %d, want %d (markers skipped)", i, m.Offset, want[i])
		}
	}
	// 10 records and 3 markers.
	return wantOffset(e, sarama.DefaultVersion, topic, 0, sarama.OffsetNewest, 13)
}
