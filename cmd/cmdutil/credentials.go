package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/credentials/ssocreds"
	"github.com/aws/smithy-go"

	"github.com/kcltool/kcltool/internal/awserr"
)

// The SDK reports a credential failure as text wrapped in text ("operation
// error DynamoDB: DescribeTable, get identity: get credentials: failed to
// refresh cached credentials, no EC2 IMDS role found, ..."), with no type
// that says "these were the credentials". kcltool wraps the credential
// provider the SDK chose, so that its failures carry a type of ours and
// the name of the provider, and can be told apart from the request's own
// errors without matching the SDK's wording.

// CredentialsError is a failure of the credential provider.
type CredentialsError struct {
	// Provider is the provider the SDK's chain chose, for
	// aws.IsCredentialsProvider.
	Provider aws.CredentialsProvider
	// Profile is the shared-config profile in use, "" for none.
	Profile string
	Err     error
}

func (e *CredentialsError) Error() string { return e.Err.Error() }
func (e *CredentialsError) Unwrap() error { return e.Err }

// markedCredentials is the SDK's provider (its credentials cache) with
// failures marked as CredentialsError. Everything else passes through.
type markedCredentials struct {
	inner   aws.CredentialsProvider
	profile string
}

func markCredentialErrors(p aws.CredentialsProvider, profile string) aws.CredentialsProvider {
	if p == nil {
		return nil
	}
	return &markedCredentials{inner: p, profile: profile}
}

func (m *markedCredentials) Retrieve(ctx context.Context) (aws.Credentials, error) {
	c, err := m.inner.Retrieve(ctx)
	if err != nil {
		return c, &CredentialsError{Provider: m.inner, Profile: m.profile, Err: err}
	}
	return c, nil
}

// IsCredentialsProvider lets the SDK see the provider inside.
func (m *markedCredentials) IsCredentialsProvider(target aws.CredentialsProvider) bool {
	return aws.IsCredentialsProvider(m.inner, target)
}

// ProviderSources keeps the SDK's user-agent note of the credential source.
func (m *markedCredentials) ProviderSources() []aws.CredentialSource {
	if s, ok := m.inner.(aws.CredentialProviderSource); ok {
		return s.ProviderSources()
	}
	return nil
}

// sharedProfile is the profile the configuration was loaded from, "" when
// no profile was named and the default one does not exist.
func sharedProfile(cfg aws.Config) string {
	for _, src := range cfg.ConfigSources {
		if sc, ok := src.(config.SharedConfig); ok {
			return sc.Profile
		}
	}
	return ""
}

// errNoRegion is the error for a configuration without a region.
func errNoRegion(cfg aws.Config) error {
	where := "set region in your AWS profile"
	if p := sharedProfile(cfg); p != "" {
		where = fmt.Sprintf("set region in profile %q", p)
	}
	return fmt.Errorf("no AWS region: pass --region, set AWS_REGION, or %s", where)
}

// ExplainedError is an error rewritten into one line with its fix; Raw is
// the SDK's own text, logged at debug.
type ExplainedError struct {
	Msg string
	Raw error
}

func (e *ExplainedError) Error() string { return e.Msg }
func (e *ExplainedError) Unwrap() error { return e.Raw }

// ExplainCredentials rewrites the SDK's profile and credential failures
// into one line with the fix. Other errors pass through unchanged.
func ExplainCredentials(err error) error {
	if err == nil {
		return nil
	}
	var ee *ExplainedError
	if errors.As(err, &ee) {
		return err
	}
	var missing config.SharedConfigProfileNotExistError
	var missingPtr *config.SharedConfigProfileNotExistError
	switch {
	case errors.As(err, &missing):
	case errors.As(err, &missingPtr) && missingPtr != nil:
		missing = *missingPtr
	default:
		return explainCredentialFailure(err)
	}
	files := ""
	if len(missing.Filename) > 0 {
		files = " in " + strings.Join(missing.Filename, " or ")
	}
	return &ExplainedError{Raw: err, Msg: fmt.Sprintf(
		"AWS profile %q not found%s: set --profile or AWS_PROFILE to a profile that exists (aws configure list-profiles)",
		missing.Profile, files)}
}

func explainCredentialFailure(err error) error {
	var ce *CredentialsError
	if !errors.As(err, &ce) {
		return explainExpiredToken(err)
	}
	profile := ce.Profile
	if profile == "" {
		profile = "default"
	}
	switch {
	case aws.IsCredentialsProvider(ce.Provider, (*ssocreds.Provider)(nil)):
		// An SSO profile gets its credentials from the token that
		// `aws sso login` caches. Whether the token is missing, expired
		// without a refresh token, or refused by SSO, logging in again is
		// the fix; only a role the user may not assume is something else.
		var ae smithy.APIError
		if errors.As(err, &ae) && awserr.Is(err, "ForbiddenException") {
			return &ExplainedError{Raw: err, Msg: fmt.Sprintf(
				"AWS SSO refused the role of profile %q (%s): check sso_account_id and sso_role_name, or pick another profile with --profile",
				profile, ae.ErrorMessage())}
		}
		return &ExplainedError{Raw: err, Msg: fmt.Sprintf(
			"the AWS SSO session of profile %q has expired or was never started: run aws sso login --profile %s", profile, profile)}
	case aws.IsCredentialsProvider(ce.Provider, (*ec2rolecreds.Provider)(nil)):
		// The chain's last resort: nothing in the environment or the
		// profile gave credentials, and no EC2 instance role answered.
		return &ExplainedError{Raw: err, Msg: "no AWS credentials found: set AWS_PROFILE or --profile, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (on EC2, attach an instance role)"}
	}
	return &ExplainedError{Raw: err, Msg: fmt.Sprintf(
		"cannot get AWS credentials for profile %q: check it in your AWS config, or pick another with --profile (--log-level debug shows the SDK's error)", profile)}
}

// explainExpiredToken handles credentials the SDK had but AWS refused as
// expired: temporary keys left in the environment or a profile.
func explainExpiredToken(err error) error {
	if awserr.ExpiredCredentials(err) {
		return &ExplainedError{Raw: err, Msg: "the AWS credentials have expired: get new ones (aws sso login --profile P, or a new AWS_SESSION_TOKEN), or pick others with --profile"}
	}
	return err
}

// LogRaw writes the SDK's own text behind an explained error to the log at
// debug: the one line on stderr says what to do, the debug log says why.
func LogRaw(log *slog.Logger, err error) {
	var ee *ExplainedError
	if errors.As(err, &ee) && ee.Raw != nil {
		log.Debug("AWS SDK error", "error", ee.Raw.Error())
	}
}
