package cmd

import "github.com/spf13/cobra"

// newDoctorCmds is being written (issue 7); until then there is no doctor.
func newDoctorCmds(f *Factory) []*cobra.Command { return nil }
