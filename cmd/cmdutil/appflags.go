package cmdutil

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"
)

// AppFlags are the flags that name a KCL application's lease table.
type AppFlags struct {
	App, Table string
}

// Register adds --app and --table to c.
func (a *AppFlags) Register(c *cobra.Command) {
	c.Flags().StringVar(&a.App, "app", "", "KCL application name (the lease table is named after it)")
	c.Flags().StringVar(&a.Table, "table", "", "lease table name, when the application set tableName (default: --app)")
}

// TableName returns the lease table name, or a usage error.
func (a *AppFlags) TableName() (string, error) {
	if a.Table != "" {
		return a.Table, nil
	}
	if err := RequireFlag("app", a.App); err != nil {
		return "", err
	}
	return a.App, nil
}

// Open resolves the lease table and the DynamoDB client that reads it.
func (a *AppFlags) Open(cmd *cobra.Command, f *Factory) (string, *dynamodb.Client, error) {
	table, err := a.TableName()
	if err != nil {
		return "", nil, err
	}
	ddb, err := f.DynamoDB(cmd.Context())
	return table, ddb, err
}

// TableArgs are the flags that name the lease table and, when the user gave
// them (on the command line or as KCLTOOL_ variables), the account and
// endpoint it was reached with: a command printed for later must reach the
// same table from any shell. Values are quoted for a POSIX shell.
func TableArgs(f *Factory, a AppFlags) string {
	args := []string{"--app", ShellQuote(a.App)}
	if a.Table != "" && a.Table != a.App {
		args = []string{"--table", ShellQuote(a.Table)}
	}
	for _, fl := range []struct{ name, value string }{{"region", f.Region}, {"profile", f.Profile}, {"endpoint-url", f.EndpointURL}} {
		if fl.value != "" {
			args = append(args, "--"+fl.name, ShellQuote(fl.value))
		}
	}
	return strings.Join(args, " ")
}
