package iampolicy

import (
	"path"
	"regexp"
	"strings"
)

// Request is one AWS call as a policy judges it.
type Request struct {
	// Action is service:Operation, as in "dynamodb:Scan".
	Action string
	// Resource is the ARN the call names; "" when the request names none
	// (a GetRecords names only its iterator, a ListShards page only its
	// token): then any resource of a statement with the action will do.
	Resource string
	// Namespace is a PutMetricData's namespace (cloudwatch:namespace).
	Namespace string
	// Prefix is an S3 listing's prefix (s3:prefix).
	Prefix string
}

// Allows says whether an Allow statement of the policy covers the request.
// It knows what the policies of this package use: exact actions, ARNs with
// * and placeholders (each matching like *), StringEquals on
// cloudwatch:namespace and StringLike on s3:prefix; any other condition
// does not match.
func (p *Policy) Allows(r Request) bool {
	for _, st := range p.Statement {
		if st.Effect == "Allow" && st.allowsAction(r.Action) && st.allowsResource(r.Resource) && st.conditionHolds(r) {
			return true
		}
	}
	return false
}

func (st Statement) allowsAction(action string) bool {
	for _, a := range st.Action {
		if strings.EqualFold(a, action) {
			return true
		}
	}
	return false
}

var placeholder = regexp.MustCompile(`\$\{[^}]*\}`)

func (st Statement) allowsResource(arn string) bool {
	if arn == "" {
		return true
	}
	for _, pat := range st.Resource {
		// path.Match's * stops at "/", as no ARN pattern here needs more
		// than one segment; its ? and [ ] do not occur in these ARNs.
		if ok, _ := path.Match(placeholder.ReplaceAllString(pat, "*"), arn); ok || pat == "*" {
			return true
		}
	}
	return false
}

func (st Statement) conditionHolds(r Request) bool {
	for op, keys := range st.Condition {
		for key, want := range keys {
			if op == "StringLike" && key == "s3:prefix" {
				if !stringLike(want, r.Prefix) {
					return false
				}
				continue
			}
			if op != "StringEquals" || key != "cloudwatch:namespace" {
				return false
			}
			if ok, _ := path.Match(placeholder.ReplaceAllString(want, "*"), r.Namespace); !ok && want != r.Namespace {
				return false
			}
		}
	}
	return true
}

// stringLike is IAM's StringLike: * matches any run of characters, "/"
// included, and ? any one.
func stringLike(pattern, s string) bool {
	var re strings.Builder
	re.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			re.WriteString(".*")
		case '?':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	re.WriteString("$")
	ok, _ := regexp.MatchString(re.String(), s)
	return ok
}
