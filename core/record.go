package core

import (
	"context"
	"fmt"
)

// recordAssembly keeps the view as the thread's next assembly record
// (Config.RecordAssemblies). A failure is a diagnostic: the model call
// the view is for goes ahead.
func (s *Session) recordAssembly(ctx context.Context, v *View) {
	if !s.rt.cfg.RecordAssemblies || s.info.ThreadID == "" || s.child {
		return
	}
	if err := s.recordPlan(ctx, v); err != nil {
		s.diagnose("_strata", "record", KindError, fmt.Errorf("record assembly plan: %w", err))
	}
}
