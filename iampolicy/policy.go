// Package iampolicy derives the least-privilege IAM policy of a kcltool
// command line: the actions the command calls, on the lease table and the
// stream its flags name. The mapping is one table (rules.go); this file is
// the machinery that reads it.
package iampolicy

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Version is the IAM policy language version every policy states.
const Version = "2012-10-17"

// Placeholders stand where the command line does not say: fill them in (they
// read as CloudFormation Fn::Sub variables).
const (
	RegionPlaceholder  = "${Region}"
	AccountPlaceholder = "${Account}"
	TablePlaceholder   = "${Table}"
	StreamPlaceholder  = "${Stream}"
	AppPlaceholder     = "${App}"
)

// Policy is an IAM identity policy document.
type Policy struct {
	Version   string      `json:"Version"`
	Statement []Statement `json:"Statement"`
}

// Statement is one Allow statement. Action and Resource are always lists.
type Statement struct {
	Sid       string                       `json:"Sid"`
	Effect    string                       `json:"Effect"`
	Action    []string                     `json:"Action"`
	Resource  []string                     `json:"Resource"`
	Condition map[string]map[string]string `json:"Condition,omitempty"`
}

// Target is the command line a policy is for.
type Target struct {
	// Command is the command's path below kcltool: "run", "checkpoint reset".
	Command string
	// Flags holds every flag of the command with its value as parsed
	// (defaults included); booleans are "true" or "false".
	Flags map[string]string
	// Region and Account go into the ARNs; empty gives placeholders.
	Region, Account string
}

// ErrNoCalls is returned for a command that makes no AWS calls.
var ErrNoCalls = errors.New("makes no AWS calls")

// For returns the policy of the target command line.
func For(t Target) (*Policy, error) {
	byRes := map[*resource][]string{}
	var used []*resource
	matched := false
	for _, r := range rules {
		if !slices.Contains(r.commands, t.Command) {
			continue
		}
		matched = true
		if !r.when.test(t) {
			continue
		}
		if byRes[r.res] == nil {
			used = append(used, r.res)
		}
		byRes[r.res] = append(byRes[r.res], r.actions...)
	}
	if !matched || len(used) == 0 {
		// No row applies: backups ls of a local folder reads only files.
		return nil, fmt.Errorf("%s %w", t.Command, ErrNoCalls)
	}
	p := &Policy{Version: Version}
	sort.SliceStable(used, func(i, j int) bool { return sidRank(used[i].sid) < sidRank(used[j].sid) })
	for _, res := range used {
		actions := byRes[res]
		sort.Strings(actions)
		st := Statement{Sid: res.sid, Effect: "Allow", Action: slices.Compact(actions), Resource: res.arns(t)}
		if res.condition != nil {
			st.Condition = res.condition(t)
		}
		p.Statement = append(p.Statement, st)
	}
	return p, nil
}

// Commands lists the commands the table knows, in its order.
func Commands() []string {
	var out []string
	for _, r := range rules {
		for _, c := range r.commands {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// rule is one row of the table.
type rule struct {
	commands []string
	when     cond
	res      *resource
	actions  []string
}

func cmds(names ...string) []string { return names }

func dynamodb(actions ...string) []string   { return prefixed("dynamodb:", actions) }
func kinesis(actions ...string) []string    { return prefixed("kinesis:", actions) }
func cloudwatch(actions ...string) []string { return prefixed("cloudwatch:", actions) }
func s3(actions ...string) []string         { return prefixed("s3:", actions) }

func prefixed(p string, actions []string) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = p + a
	}
	return out
}

// cond is a condition on the flags; flags names them, so that a test can
// hold the table to the commands' real flags.
type cond struct {
	test  func(Target) bool
	flags []string
}

var always = cond{test: func(Target) bool { return true }}

// flag is a boolean flag that is on.
func flag(name string) cond {
	return cond{func(t Target) bool { return t.Flags[name] == "true" }, []string{name}}
}

// given is true when any of the flags has a value.
func given(names ...string) cond {
	return cond{func(t Target) bool { return slices.ContainsFunc(names, t.given) }, names}
}

func not(c cond) cond {
	return cond{func(t Target) bool { return !c.test(t) }, c.flags}
}

func all(cs ...cond) cond {
	var names []string
	for _, c := range cs {
		names = append(names, c.flags...)
	}
	return cond{func(t Target) bool {
		for _, c := range cs {
			if !c.test(t) {
				return false
			}
		}
		return true
	}, names}
}

// FlagsOf lists the flags the table's conditions read for a command.
func FlagsOf(command string) []string {
	var out []string
	for _, r := range rules {
		if slices.Contains(r.commands, command) {
			for _, f := range r.when.flags {
				if !slices.Contains(out, f) {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

func (t Target) given(name string) bool {
	v := t.Flags[name]
	return v != "" && v != "[]" && v != "false"
}

// or returns the value of the first flag given, else def.
func (t Target) or(def string, names ...string) string {
	for _, n := range names {
		if t.given(n) {
			return t.Flags[n]
		}
	}
	return def
}

func (t Target) region() string  { return orDefault(t.Region, RegionPlaceholder) }
func (t Target) account() string { return orDefault(t.Account, AccountPlaceholder) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// TableARN is the ARN of a DynamoDB table.
func TableARN(region, account, table string) string {
	return "arn:aws:dynamodb:" + region + ":" + account + ":table/" + table
}

// S3ARN is the ARN of an S3 bucket, or of the objects under a key (which
// may end with the * of a prefix).
func S3ARN(bucket, key string) string {
	if key == "" {
		return "arn:aws:s3:::" + bucket
	}
	return "arn:aws:s3:::" + bucket + "/" + key
}

// StreamARN is the ARN of a Kinesis stream.
func StreamARN(region, account, stream string) string {
	return "arn:aws:kinesis:" + region + ":" + account + ":stream/" + stream
}

func (t Target) tableARN(table string) string { return TableARN(t.region(), t.account(), table) }

// streamARN takes a stream name, or a multi-stream table's stream
// identifier (account:name:creationEpoch), which names the account itself.
func (t Target) streamARN(s string) string {
	account := t.account()
	if parts := strings.Split(s, ":"); len(parts) == 3 {
		account, s = parts[0], parts[1]
	}
	return StreamARN(t.region(), account, s)
}
