package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ItemType discriminates the kinds of Item.
type ItemType string

// The item types of the Responses-style item model.
const (
	TypeMessage            ItemType = "message"
	TypeFunctionCall       ItemType = "function_call"
	TypeFunctionCallOutput ItemType = "function_call_output"
)

// Role is the author of a message.
type Role string

// Message roles.
const (
	RoleSystem    Role = "system"
	RoleDeveloper Role = "developer"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Part is one piece of a message's content. Only text parts exist today:
// "input_text" for what the host sends, "output_text" for what the model
// wrote.
type Part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// Item is one entry of a conversation: a message, a function call or a
// function call's output. It is a plain value that round-trips through
// JSON; the fields that do not belong to its Type stay empty.
//
// The field order is fixed, so encoding/json renders the same item to the
// same bytes every time: the runtime relies on it for cache stability.
type Item struct {
	Type ItemType `json:"type"`
	// ID is optional; layers set it to name their blocks.
	ID string `json:"id,omitempty"`

	// Message fields.
	Role    Role   `json:"role,omitempty"`
	Content []Part `json:"content,omitempty"`

	// Function call and output fields. CallID pairs a call with its output.
	CallID    string `json:"call_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Output    string `json:"output,omitempty"`

	// Compaction is the boundary of a TypeCompaction event, whose
	// summary is its one content part.
	Compaction *CompactionMark `json:"compaction,omitempty"`
	// Resident names the activation of a TypeContent event, whose
	// content is its one part.
	Resident *ContentMark `json:"resident,omitempty"`
}

// Message builds a message item with one text part.
func Message(role Role, text string) Item {
	partType := "input_text"
	if role == RoleAssistant {
		partType = "output_text"
	}
	return Item{Type: TypeMessage, Role: role, Content: []Part{{Type: partType, Text: text}}}
}

// DeveloperMessage builds a developer message, the form of layer output.
func DeveloperMessage(text string) Item { return Message(RoleDeveloper, text) }

// SystemMessage builds a system message.
func SystemMessage(text string) Item { return Message(RoleSystem, text) }

// UserMessage builds a user message.
func UserMessage(text string) Item { return Message(RoleUser, text) }

// AssistantMessage builds an assistant message.
func AssistantMessage(text string) Item { return Message(RoleAssistant, text) }

// FunctionCall builds a function call item. arguments must be JSON.
func FunctionCall(callID, name, arguments string) Item {
	return Item{Type: TypeFunctionCall, CallID: callID, Name: name, Arguments: arguments}
}

// FunctionCallOutput builds the output of the call with callID.
func FunctionCallOutput(callID, output string) Item {
	return Item{Type: TypeFunctionCallOutput, CallID: callID, Output: output}
}

// Text returns the concatenated text of a message, the arguments of a
// function call or the output of a function call output. It is what token
// counting and search see of an item.
func (it Item) Text() string {
	switch it.Type {
	case TypeMessage:
		if len(it.Content) == 1 {
			return it.Content[0].Text
		}
		var b strings.Builder
		for i, p := range it.Content {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(p.Text)
		}
		return b.String()
	case TypeFunctionCall:
		return it.Name + " " + it.Arguments
	case TypeFunctionCallOutput:
		return it.Output
	}
	return ""
}

// ErrInvalidItem is wrapped by the errors of Item.Validate.
var ErrInvalidItem = errors.New("core: invalid item")

// Validate reports whether the item is well formed for its type.
func (it Item) Validate() error {
	switch it.Type {
	case TypeMessage:
		switch it.Role {
		case RoleSystem, RoleDeveloper, RoleUser, RoleAssistant:
		default:
			return fmt.Errorf("%w: message role %q", ErrInvalidItem, it.Role)
		}
	case TypeFunctionCall:
		if it.CallID == "" || it.Name == "" {
			return fmt.Errorf("%w: function_call needs call_id and name", ErrInvalidItem)
		}
		if it.Arguments != "" && !json.Valid([]byte(it.Arguments)) {
			return fmt.Errorf("%w: function_call %q arguments are not JSON", ErrInvalidItem, it.Name)
		}
	case TypeFunctionCallOutput:
		if it.CallID == "" {
			return fmt.Errorf("%w: function_call_output needs call_id", ErrInvalidItem)
		}
	case TypeCompaction:
		if it.Compaction == nil || it.Compaction.Through < 0 || len(it.Content) != 1 {
			return fmt.Errorf("%w: compaction needs a boundary and one summary part", ErrInvalidItem)
		}
	case TypeContent:
		if it.Resident == nil || it.Resident.Kind == "" || it.Resident.Key == "" || len(it.Content) != 1 {
			return fmt.Errorf("%w: content needs a kind, a key and one part", ErrInvalidItem)
		}
	default:
		return fmt.Errorf("%w: unknown type %q", ErrInvalidItem, it.Type)
	}
	return nil
}

// DecodeArguments decodes JSON function-call arguments into a T, rejecting
// unknown fields and trailing data.
func DecodeArguments[T any](raw string) (T, error) {
	var v T
	if raw == "" {
		raw = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("invalid arguments: %w", err)
	}
	if dec.More() {
		return v, errors.New("invalid arguments: trailing data after the JSON object")
	}
	return v, nil
}
