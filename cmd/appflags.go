package cmd

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/spf13/cobra"
)

// appFlags are the flags that name a KCL application's lease table.
type appFlags struct {
	App, Table string
}

func (a *appFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&a.App, "app", "", "KCL application name (the lease table is named after it)")
	c.Flags().StringVar(&a.Table, "table", "", "lease table name, when the application set tableName (default: --app)")
}

// table returns the lease table name, or a usage error.
func (a *appFlags) table() (string, error) {
	if a.Table != "" {
		return a.Table, nil
	}
	if err := requireFlag("app", a.App); err != nil {
		return "", err
	}
	return a.App, nil
}

// open resolves the lease table and the DynamoDB client that reads it.
func (a *appFlags) open(cmd *cobra.Command, f *Factory) (string, *dynamodb.Client, error) {
	table, err := a.table()
	if err != nil {
		return "", nil, err
	}
	ddb, err := f.DynamoDB(cmd.Context())
	return table, ddb, err
}
