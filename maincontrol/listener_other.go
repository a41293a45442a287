//go:build !unix

package maincontrol

// boundAddr is what --listen said where the listener cannot be asked.
func (s *Server) boundAddr() string { return s.cfg.Listen }

// limitBacklog leaves the backlog as it is where it cannot be set.
func (s *Server) limitBacklog(int) {}
