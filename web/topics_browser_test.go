package web_test

import (
	"net/http"
	"testing"

	"roomhub/internal/testbrowser"
	"roomhub/internal/testhub"
	"roomhub/internal/testredis"
)

// The element's preferences list what the person follows, each with Leave,
// by keyboard: Leave goes to the hub, the row goes, the focus moves to the
// next Leave and a screen reader hears it; axe-core finds nothing. In
// Korean, the same list in its words.
func TestBrowser_InboxElementListsTopicsWithLeave(t *testing.T) {
	t.Parallel()
	th := testhub.Start(t, testredis.Start(t).Addr(), nil)
	const user = 9
	key := map[string]string{"X-Internal-Key": th.Cfg.InternalAPIKey, "Content-Type": "application/json"}
	for _, topic := range []string{"issue:42", "product:123"} {
		if code, env := th.Do(t, http.MethodPut, "/api/v1/internal/topics/"+topic+"/followers", key, `{"userIds":[9]}`); code != 200 {
			t.Fatalf("follow %s: %d %+v", topic, code, env)
		}
	}
	d := testbrowser.Start(t, "inbox.mjs", th.URL+"/static/inbox.html?user=9", testhub.ArtifactsDir(t))
	d.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	d.Send(t, `CLICK roomhub-inbox .gear`)
	d.Send(t, `TEXT roomhub-inbox .topics legend | What you follow`)
	d.Send(t, `COUNT roomhub-inbox .topics .row | 2`)
	k := keyboardRun{th: th, d: d, user: user}
	k.axe(t, "the preferences with the topics followed")
	d.Send(t, `EVAL document.querySelector('roomhub-inbox').shadowRoot.querySelector('.topics button').focus()`) // the first Leave
	k.focus(t, "Leave issue:42")
	d.Send(t, "KEY Enter")
	k.focus(t, "Leave product:123")
	d.Send(t, `COUNT roomhub-inbox .topics .row | 1`)
	d.Send(t, `TEXT roomhub-inbox [aria-live] | You no longer follow issue:42`)
	code, env := th.UserDo(t, http.MethodGet, "/api/v1/topics", user, "")
	var mine struct{ Topics []struct{ TopicKey string } }
	if testhub.Remarshal(t, env.Result, &mine); code != 200 || len(mine.Topics) != 1 || mine.Topics[0].TopicKey != "product:123" {
		t.Fatalf("after Leave: %d %+v", code, mine)
	}
	d.Send(t, "KEY Space") // the last one: the list goes, the focus to Save
	k.focus(t, "Save")
	d.Send(t, `COUNT roomhub-inbox .topics | 0`)

	if code, env := th.Do(t, http.MethodPut, "/api/v1/internal/topics/product:123/followers", key, `{"userIds":[9]}`); code != 200 {
		t.Fatalf("follow again: %d %+v", code, env)
	}
	ko := testbrowser.Start(t, "inbox.mjs", th.URL+"/static/inbox.html?user=9&locale=ko", testhub.ArtifactsDir(t))
	ko.Send(t, `CLICK roomhub-inbox [part="bell"]`)
	ko.Send(t, `CLICK roomhub-inbox .gear`)
	ko.Send(t, `TEXT roomhub-inbox .topics legend | 받아 보는 소식`)
	ko.Send(t, `TEXT roomhub-inbox .topics button | 그만 받기`)
	keyboardRun{th: th, d: ko, user: user}.axe(t, "the topics in Korean")
}
