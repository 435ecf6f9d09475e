package cmdutil

import "encoding/json"

// OptString is a string that is JSON null when empty. Every documented key
// is present in every JSON object kcltool prints (docs/json.md), so a value
// a lease or row does not have must be written as null, not left out and
// not as "". A string type, not *string, so the lease listing, the one hot
// path, converts without an allocation per field.
type OptString string

// MarshalJSON writes null for "", else the string as encoding/json would.
func (s OptString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(s))
}

// OrEmpty makes a nil list [] in JSON: list keys are never null, so
// `jq '.key[]'` works on every object.
func OrEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
