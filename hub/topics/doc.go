// Package topics keeps who follows what (DESIGN's Topics) and fans topic
// publishes out to the followers. A backend adds and removes a topic's
// followers, deletes a topic (trash.go); a person lists and leaves what they
// follow. A topic's followers live in its own slot ({t:<topicKey>}), in id
// order, in chunks of a hash (lua/topic_lib.lua); each person's topics in
// theirs (topics:{u}). A follow numbers itself (its seq), so that a
// publish to the topic reaches exactly those who followed before it.
//
// A publish naming a topic is started here by the inbox (inbox.Fanouts;
// fanout.go): a snapshot of the topic (its seq, its followers, how many of
// the skipped follow it) and a record of the fan-out in its own slot
// ({f:<id>}). Every instance's runner (runner.go) runs the listed fan-outs
// whose lease it holds, a step at a time: the next followers walked in id
// order, their items written by the inbox (idempotent), the step recorded
// by the lease's holder alone. One that dies leaves its lease to lapse, and
// another instance goes on from the last recorded step.
package topics
