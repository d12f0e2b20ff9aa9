package rpc

import "fmt"

// OpFindBatchesMulti is the op tests take away from a server to play a
// coordinator that predates it.
const OpFindBatchesMulti = opFindBatchesMulti

// StopServing unsubscribes s from op, as a coordinator built before op
// existed would never have subscribed.
func (s *Server) StopServing(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	subject := Subject(s.cluster, op)
	for i, sub := range s.mu.subs {
		if sub.Subject == subject {
			s.mu.subs = append(s.mu.subs[:i], s.mu.subs[i+1:]...)
			if err := sub.Unsubscribe(); err != nil {
				return err
			}
			return s.nc.Flush()
		}
	}
	return fmt.Errorf("no subscription to %s", subject)
}
