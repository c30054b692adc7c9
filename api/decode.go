package api

import (
	"encoding/json"
	"errors"
	"reflect"

	"github.com/quarrysearch/quarry/api/strictjson"
)

// DecodeStrict decodes JSON a user sent into v (a pointer), strictly: one
// JSON value of v's shape (its json tags), valid UTF-8 throughout, every
// key known, spelled exactly and given once, every value of its field's
// type, no key twice in free-form parts (a mapping, a plugin's config)
// either (package strictjson says why each matters). what names the
// input in the error, "index definition" say: a CodeBadRequest error
// ("malformed index definition: shards must be an integer, got a
// string"), never Go's type names.
func DecodeStrict(what string, data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		return Errorf(CodeInternal, "DecodeStrict needs a pointer, got %T", v)
	}
	if err := strictjson.Check(data, strictjson.For(t.Elem())); err != nil {
		return BadRequest("malformed %s: %v", what, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		return BadRequest("malformed %s: %s", what, strictjson.Describe(err))
	}
	return nil
}
