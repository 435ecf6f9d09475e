package ddbmodel

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The expression grammar this model parses is the part of DynamoDB's that
// the lease protocol sends (leasecore/protocol.go, expression.go; reshard's
// SET of one attribute):
//
//	condition := or
//	or        := and ("OR" and)*
//	and       := unary ("AND" unary)*
//	unary     := "NOT" unary | "(" or ")" | fn "(" path ")" | path "=" operand | path "<>" operand
//	fn        := attribute_exists | attribute_not_exists
//	update    := ("SET" path "=" operand ("," ...)* | "ADD" path operand (",")* | "REMOVE" path (",")*)+
//
// Paths are top-level attribute names or #placeholders; operands are
// :placeholders. Anything else is a ValidationException, so a new shape of
// write in leasecore fails the simulation instead of being misread.

type cond interface {
	eval(item map[string]types.AttributeValue, names map[string]string, values map[string]types.AttributeValue) (bool, error)
}

type (
	orCond  []cond
	andCond []cond
	notCond struct{ c cond }
	existsC struct {
		path   string
		exists bool
	}
	cmpCond struct {
		path, operand string
		equal         bool
	}
)

func (o orCond) eval(it map[string]types.AttributeValue, n map[string]string, v map[string]types.AttributeValue) (bool, error) {
	for _, c := range o {
		ok, err := c.eval(it, n, v)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

func (a andCond) eval(it map[string]types.AttributeValue, n map[string]string, v map[string]types.AttributeValue) (bool, error) {
	for _, c := range a {
		ok, err := c.eval(it, n, v)
		if err != nil || !ok {
			return ok, err
		}
	}
	return true, nil
}

func (c notCond) eval(it map[string]types.AttributeValue, n map[string]string, v map[string]types.AttributeValue) (bool, error) {
	ok, err := c.c.eval(it, n, v)
	return !ok, err
}

func (c existsC) eval(it map[string]types.AttributeValue, n map[string]string, _ map[string]types.AttributeValue) (bool, error) {
	name, err := resolveName(c.path, n)
	if err != nil {
		return false, err
	}
	_, ok := it[name]
	return ok == c.exists, nil
}

func (c cmpCond) eval(it map[string]types.AttributeValue, n map[string]string, v map[string]types.AttributeValue) (bool, error) {
	name, err := resolveName(c.path, n)
	if err != nil {
		return false, err
	}
	want, err := resolveValue(c.operand, v)
	if err != nil {
		return false, err
	}
	have, ok := it[name]
	if !ok {
		return false, nil // a comparison with a missing attribute is false, either way
	}
	eq := equalAV(have, want)
	return eq == c.equal, nil
}

type updateAction struct {
	kind    string // SET, ADD, REMOVE
	path    string
	operand string
}

func resolveName(path string, names map[string]string) (string, error) {
	if strings.HasPrefix(path, "#") {
		n, ok := names[path]
		if !ok {
			return "", validation("An expression attribute name used in the document path is not defined; attribute name: " + path)
		}
		return n, nil
	}
	return path, nil
}

func resolveValue(op string, values map[string]types.AttributeValue) (types.AttributeValue, error) {
	v, ok := values[op]
	if !ok {
		return nil, validation("An expression attribute value used in expression is not defined; attribute value: " + op)
	}
	return v, nil
}

// tokens splits an expression into words, placeholders and punctuation.
func tokens(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		r := rune(s[i])
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '(' || r == ')' || r == ',' || r == '=':
			out = append(out, s[i:i+1])
			i++
		case r == '<' && i+1 < len(s) && s[i+1] == '>':
			out = append(out, "<>")
			i += 2
		default:
			j := i
			for j < len(s) && !unicode.IsSpace(rune(s[j])) && !strings.ContainsRune("(),=<", rune(s[j])) {
				j++
			}
			if j == i {
				j = i + 1
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

type parser struct {
	toks []string
	pos  int
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) next() string { t := p.peek(); p.pos++; return t }

func (p *parser) expect(t string) error {
	if got := p.next(); got != t {
		return fmt.Errorf("expected %q, got %q", t, got)
	}
	return nil
}

func parseCondition(s string) (cond, error) {
	p := &parser{toks: tokens(s)}
	c, err := p.or()
	if err == nil && p.pos != len(p.toks) {
		err = fmt.Errorf("unexpected %q", p.peek())
	}
	if err != nil {
		return nil, validation(fmt.Sprintf("Invalid ConditionExpression: %v (in %q; this model parses only the lease protocol's expressions)", err, s))
	}
	return c, nil
}

func (p *parser) or() (cond, error) {
	var out orCond
	for {
		c, err := p.and()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if !strings.EqualFold(p.peek(), "OR") {
			break
		}
		p.next()
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

func (p *parser) and() (cond, error) {
	var out andCond
	for {
		c, err := p.unary()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if !strings.EqualFold(p.peek(), "AND") {
			break
		}
		p.next()
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return out, nil
}

func (p *parser) unary() (cond, error) {
	t := p.next()
	switch {
	case strings.EqualFold(t, "NOT"):
		c, err := p.unary()
		return notCond{c}, err
	case t == "(":
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		return c, p.expect(")")
	case t == "attribute_exists" || t == "attribute_not_exists":
		if err := p.expect("("); err != nil {
			return nil, err
		}
		path := p.next()
		if !isPath(path) {
			return nil, fmt.Errorf("bad path %q", path)
		}
		return existsC{path: path, exists: t == "attribute_exists"}, p.expect(")")
	case isPath(t):
		op := p.next()
		if op != "=" && op != "<>" {
			return nil, fmt.Errorf("operator %q not modelled", op)
		}
		v := p.next()
		if !strings.HasPrefix(v, ":") {
			return nil, fmt.Errorf("operand %q is not a :placeholder", v)
		}
		return cmpCond{path: t, operand: v, equal: op == "="}, nil
	}
	return nil, fmt.Errorf("unexpected %q", t)
}

func isPath(t string) bool {
	if t == "" || strings.ContainsAny(t, ".[:") {
		return false
	}
	switch strings.ToUpper(t) {
	case "AND", "OR", "NOT", "SET", "ADD", "REMOVE", "DELETE":
		return false
	}
	return true
}

func parseUpdate(s string) ([]updateAction, error) {
	p := &parser{toks: tokens(s)}
	var out []updateAction
	fail := func(err error) ([]updateAction, error) {
		return nil, validation(fmt.Sprintf("Invalid UpdateExpression: %v (in %q; this model parses only the lease protocol's expressions)", err, s))
	}
	for p.pos < len(p.toks) {
		kind := strings.ToUpper(p.next())
		if kind != "SET" && kind != "ADD" && kind != "REMOVE" {
			return fail(fmt.Errorf("clause %q not modelled", kind))
		}
		for {
			path := p.next()
			if !isPath(path) {
				return fail(fmt.Errorf("bad path %q", path))
			}
			a := updateAction{kind: kind, path: path}
			switch kind {
			case "SET":
				if err := p.expect("="); err != nil {
					return fail(err)
				}
				a.operand = p.next()
			case "ADD":
				a.operand = p.next()
			}
			if kind != "REMOVE" && !strings.HasPrefix(a.operand, ":") {
				return fail(fmt.Errorf("operand %q is not a :placeholder", a.operand))
			}
			out = append(out, a)
			if p.peek() != "," {
				break
			}
			p.next()
		}
	}
	if len(out) == 0 {
		return fail(fmt.Errorf("empty"))
	}
	return out, nil
}
