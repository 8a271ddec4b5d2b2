// Package topics keeps who follows what (DESIGN's Topics): a backend adds
// and removes a topic's followers, a person lists and leaves what they
// follow. A topic's followers live in its own slot ({t:<topicKey>}), in id
// order, in chunks of a hash (lua/topic_lib.lua); each person's topics in
// theirs (topics:{u}). A follow numbers itself (its seq), so that a
// publish to the topic reaches exactly those who followed before it.
package topics
