package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/endpointcreds"
	"github.com/spf13/cobra"

	"github.com/kcltool/kcltool/cmd/cmdutil"
	"github.com/kcltool/kcltool/internal/javaprops"
)

// AwsCredentialsProvider names Java credential providers, the way the
// MultiLangDaemon reads it (AwsCredentialsProviderPropertyValueDecoder):
// a comma-separated chain, each a class name (short or fully qualified)
// with arguments after '|'. kcltool maps the providers the Go SDK has too.

// isCredentialsKey: the MultiLangDaemon reads these keys in any case.
func isCredentialsKey(k string) bool {
	switch strings.ToLower(k) {
	case "awscredentialsprovider", "awscredentialsproviderdynamodb", "awscredentialsprovidercloudwatch":
		return true
	}
	return false
}

// credentialsEntry finds a credentials key in any case.
func (p *propertiesRun) credentialsEntry(key string) (javaprops.Entry, bool) {
	for _, e := range p.props.Entries {
		if strings.EqualFold(e.Key, key) {
			e.Value = strings.TrimSpace(e.Value)
			return e, true
		}
	}
	return javaprops.Entry{}, false
}

// credProvider is one element of the chain.
type credProvider struct {
	name, arg string
}

// parseCredentialChain splits a value into its providers.
func parseCredentialChain(v string) []credProvider {
	var chain []credProvider
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		fields := strings.Split(part, "|")
		name := fields[0]
		if i := strings.LastIndex(name, "."); i >= 0 {
			name = name[i+1:] // software.amazon.awssdk.auth.credentials.X is X
		}
		cp := credProvider{name: name}
		if len(fields) > 1 {
			cp.arg = strings.Join(fields[1:], "|")
		}
		chain = append(chain, cp)
	}
	return chain
}

// defaultChainNames are the default chain's names, v2 and v1.
var defaultChainNames = map[string]bool{"DefaultCredentialsProvider": true, "DefaultAWSCredentialsProviderChain": true}

func (p *propertiesRun) applyCredentials(cmd *cobra.Command, f *cmdutil.Factory) error {
	e, ok := p.credentialsEntry("AwsCredentialsProvider")
	for _, other := range []string{"AwsCredentialsProviderDynamoDB", "AwsCredentialsProviderCloudWatch"} {
		o, has := p.credentialsEntry(other)
		if has && (!ok || o.Value != e.Value) {
			return cmdutil.UsageErrorf("%s = %s in %s: kcltool uses one set of credentials for every service; remove %s to use AwsCredentialsProvider's", o.Key, o.Value, p.where(o), o.Key)
		}
	}
	if !ok || e.Value == "" {
		return nil
	}
	chain := parseCredentialChain(e.Value)
	if len(chain) == 0 {
		return nil
	}
	for _, cp := range chain {
		if err := checkProvider(cp); err != nil {
			return cmdutil.UsageErrorf("AwsCredentialsProvider = %s in %s: %v", e.Value, p.where(e), err)
		}
	}
	p.credentials = e.Value
	row := configRow{Setting: "credentials", Value: e.Value, Source: sourceFile, Property: e.Key}
	defer func() { p.extra = append(p.extra, row) }()
	if len(chain) == 1 && defaultChainNames[chain[0].name] {
		row.Note = "the SDK's default chain"
		return nil
	}
	// One profile provider is --profile, so the profile's region counts too.
	if len(chain) == 1 && chain[0].name == "ProfileCredentialsProvider" {
		if chain[0].arg == "" {
			row.Note = "the default profile (AWS_PROFILE or default)"
			return nil
		}
		if fl := cmd.Flags().Lookup("profile"); fl != nil && fl.Changed {
			row.Note = "--profile wins (" + sourceOf(fl) + ")"
			return nil
		}
		row.Note = "--profile " + chain[0].arg
		return p.set(cmd, "profile", chain[0].arg, e)
	}
	row.Note = "a chain: the first provider with credentials wins"
	f.Credentials = func(loaded aws.CredentialsProvider) aws.CredentialsProvider {
		var ps []aws.CredentialsProvider
		for _, cp := range chain {
			ps = append(ps, buildProvider(cp, loaded, f.Getenv))
		}
		return aws.NewCredentialsCache(chainProvider(ps))
	}
	return nil
}

// checkProvider refuses a provider kcltool cannot honour, naming what to
// use instead.
func checkProvider(cp credProvider) error {
	switch {
	case defaultChainNames[cp.name], cp.name == "ProfileCredentialsProvider",
		cp.name == "EnvironmentVariableCredentialsProvider", cp.name == "EnvironmentVariableCredentialsProviderV1",
		cp.name == "InstanceProfileCredentialsProvider", cp.name == "ContainerCredentialsProvider",
		cp.name == "EC2ContainerCredentialsProviderWrapper":
		return nil
	case strings.Contains(strings.ToLower(cp.name), "assumerole"):
		return fmt.Errorf("kcltool cannot assume a role from the properties file (%s): put role_arn and source_profile (or credential_source) in a profile of ~/.aws/config and use ProfileCredentialsProvider|PROFILE, --profile PROFILE or AWS_PROFILE", cp.name)
	}
	return fmt.Errorf("kcltool cannot use the Java credentials provider %s: use DefaultCredentialsProvider (the SDK's default chain: environment, profile, web identity, container, instance role) or ProfileCredentialsProvider|PROFILE", cp.name)
}

// buildProvider makes one element of the chain.
func buildProvider(cp credProvider, loaded aws.CredentialsProvider, getenv func(string) string) aws.CredentialsProvider {
	switch cp.name {
	case "ProfileCredentialsProvider":
		if cp.arg == "" {
			return loaded
		}
		return profileProvider(cp.arg)
	case "EnvironmentVariableCredentialsProvider", "EnvironmentVariableCredentialsProviderV1":
		return aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
			if id == "" || secret == "" {
				return aws.Credentials{}, errors.New("EnvironmentVariableCredentialsProvider: AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not set")
			}
			return credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN")).Retrieve(context.Background())
		})
	case "InstanceProfileCredentialsProvider":
		return ec2rolecreds.New()
	case "ContainerCredentialsProvider", "EC2ContainerCredentialsProviderWrapper":
		return containerProvider(getenv)
	}
	return loaded // the default chain
}

// profileProvider loads a named profile's credentials on first use.
func profileProvider(name string) aws.CredentialsProvider {
	var once sync.Once
	var prov aws.CredentialsProvider
	var err error
	return aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
		once.Do(func() {
			var cfg aws.Config
			cfg, err = config.LoadDefaultConfig(ctx, config.WithSharedConfigProfile(name))
			prov = cfg.Credentials
		})
		if err != nil {
			return aws.Credentials{}, fmt.Errorf("ProfileCredentialsProvider|%s: %w", name, err)
		}
		if prov == nil {
			return aws.Credentials{}, fmt.Errorf("ProfileCredentialsProvider|%s: no credentials", name)
		}
		return prov.Retrieve(ctx)
	})
}

// containerProvider reads ECS and EKS Pod Identity credentials, from the
// variables the Java SDK's ContainerCredentialsProvider reads.
func containerProvider(getenv func(string) string) aws.CredentialsProvider {
	return aws.CredentialsProviderFunc(func(ctx context.Context) (aws.Credentials, error) {
		url := getenv("AWS_CONTAINER_CREDENTIALS_FULL_URI")
		if rel := getenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"); rel != "" {
			url = "http://169.254.170.2" + rel
		}
		if url == "" {
			return aws.Credentials{}, errors.New("ContainerCredentialsProvider: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI is not set")
		}
		token := getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN")
		if file := getenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"); file != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				return aws.Credentials{}, fmt.Errorf("ContainerCredentialsProvider: %w", err)
			}
			token = strings.TrimSpace(string(b))
		}
		return endpointcreds.New(url, func(o *endpointcreds.Options) { o.AuthorizationToken = token }).Retrieve(ctx)
	})
}

// chainProvider returns the first provider's credentials that has them.
type chainProvider []aws.CredentialsProvider

func (c chainProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	var errs []error
	for _, p := range c {
		creds, err := p.Retrieve(ctx)
		if err == nil {
			return creds, nil
		}
		errs = append(errs, err)
	}
	return aws.Credentials{}, fmt.Errorf("no provider of AwsCredentialsProvider has credentials: %w", errors.Join(errs...))
}
