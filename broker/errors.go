package broker

// errorMessage returns a message for responses that carry one, nil when err
// is nil. Codes come from coordapi.ErrorCode.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
