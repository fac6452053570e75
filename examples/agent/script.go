package main

import (
	"fmt"
	"strings"

	"github.com/stratamem/strata/core"
	"github.com/stratamem/strata/provider"
)

// scriptedAgent is the offline stand-in for a model: a few rules that call
// the same tools a real model would, and answers built from what the view
// shows, so the memory layers can be seen at work. It reads the view the
// way a model does: the newest user message, whether its tools already
// ran this turn, and the memory blocks.
func scriptedAgent(req provider.Request, call int) ([]core.Item, error) {
	v := req.View
	var user string
	var called bool
	for _, it := range v.Band(core.BandHistory) {
		switch {
		case it.Type == core.TypeMessage && it.Role == core.RoleUser:
			user, called = it.Text(), false
		case it.Type == core.TypeFunctionCall:
			called = true
		}
	}
	id := fmt.Sprintf("call-%d", call)
	say := func(text string) ([]core.Item, error) { return []core.Item{core.AssistantMessage(text)}, nil }
	if called {
		// The tools ran (or were refused): say so, as a model would,
		// instead of answering the request again.
		switch {
		case strings.HasPrefix(user, "Hi! My name is Ada"):
			return say("Nice to meet you, Ada. I have noted that you work at Acme Robotics.")
		case strings.HasPrefix(user, "todo: "):
			return say(fmt.Sprintf("Added %q to your todo list.", strings.TrimPrefix(user, "todo: ")))
		case strings.Contains(user, "dropping parts"):
			return say("Noted in my scratchpad: parts over 40 mm slip, and you suspect the jaw travel. Shall I add measuring it to your todos?")
		case strings.HasPrefix(user, "Here is this morning's pick-and-place log"):
			return say("That fits your theory: every part over 40 mm reached the jaw's end stop before gripping, while parts up to 39 mm were fine. I noted it.")
		case strings.Contains(user, "moved to Lisbon"):
			return say("Noted that you live in Lisbon since yesterday. Welcome!")
		case strings.Contains(user, "delete all"):
			return say("I cannot delete your files from here; please confirm in the app.")
		}
		return say("Done.")
	}
	switch {
	case strings.HasPrefix(user, "Hi! My name is Ada"):
		return []core.Item{
			core.FunctionCall(id+"a", "entity/update", `{"entities":[{"name":"Ada","type":"person","notes":["the user"]},{"name":"Acme Robotics","type":"organization","notes":["Ada works here"]}]}`),
			core.FunctionCall(id+"b", "temporal/record", `{"facts":[{"subject":"Ada","predicate":"works at","value":"Acme Robotics"}]}`),
		}, nil
	case strings.HasPrefix(user, "todo: "):
		return []core.Item{core.FunctionCall(id, "add_todo", fmt.Sprintf(`{"item":%q}`, strings.TrimPrefix(user, "todo: ")))}, nil
	case strings.HasPrefix(user, "Here is this morning's pick-and-place log"):
		return []core.Item{core.FunctionCall(id, "scratchpad/update",
			`{"set":{"gripper log":"cell 3, this morning: every part over 40 mm hit the jaw end stop and slipped; parts up to 39 mm fine"}}`)}, nil
	case strings.Contains(user, "dropping parts"):
		return []core.Item{core.FunctionCall(id, "scratchpad/update",
			`{"set":{"gripper":"drops parts wider than 40 mm; Ada suspects the jaw travel is too short"}}`)}, nil
	case strings.Contains(user, "moved to Lisbon yesterday"):
		return []core.Item{core.FunctionCall(id, "temporal/record", `{"facts":[{"subject":"Ada","predicate":"lives in","value":"Lisbon","when":"yesterday"}]}`)}, nil
	case strings.Contains(user, "delete all"):
		return []core.Item{core.FunctionCall(id, "delete_all_files", `{}`)}, nil
	}
	all := ""
	for _, it := range v.Items() {
		all += it.Text() + "\n"
	}
	switch {
	case strings.Contains(user, "where the gripper work stands"):
		// Answered from the scratchpad, which holds the note whatever
		// the history still shows.
		if strings.Contains(all, "jaw travel is too short") {
			return say("The gripper drops parts wider than 40 mm, which you put down to too short a jaw travel; reviewing its design is on your todo list.")
		}
		return say("I have no notes on the gripper.")
	case strings.Contains(user, "Where do I live"):
		var parts []string
		if strings.Contains(all, "Lisbon") {
			parts = append(parts, "You live in Lisbon (since the day before your last visit)")
		}
		if strings.Contains(all, "review the gripper design") {
			parts = append(parts, "your todo list has: review the gripper design")
		}
		if len(parts) == 0 {
			return say("I have nothing about you yet.")
		}
		return say(strings.Join(parts, "; ") + ".")
	case strings.Contains(user, "gripper"):
		// Answered from the semantic recall block: the first visit's
		// messages found by meaning.
		for _, it := range v.Band(core.BandLive) {
			if strings.Contains(it.Text(), "jaw travel") {
				return say("On your first visit you said the gripper drops parts wider than 40 mm and suspected the jaw travel; you also put reviewing its design on your todos.")
			}
		}
		return say("I found nothing about a gripper.")
	}
	return say("I am a scripted stand-in and only know the demo's lines; set ANTHROPIC_API_KEY or OPENAI_API_KEY for a real model.")
}
