package delivery

import "time"

// shareWait is when a hand-off that found its channel's share busy is
// tried again.
const shareWait = time.Second

// channelShares gives each channel its own share of jobs hand-offs may
// hold at once: jobs split evenly, at least one each. A channel whose
// gateway or push service is slow holds at most its share; the others'
// hand-offs go on.
func channelShares(channels []string, jobs int) map[string]chan struct{} {
	n := max(1, jobs/max(1, len(channels)))
	shares := make(map[string]chan struct{}, len(channels))
	for _, ch := range channels {
		shares[ch] = make(chan struct{}, n)
		for range n {
			shares[ch] <- struct{}{}
		}
	}
	return shares
}

// takeShare takes a slot of ch's share, without waiting.
func (d *Delivery) takeShare(ch string) bool {
	slots, ok := d.shares[ch]
	if !ok {
		return true // a channel no longer configured: its hand-off is sent as ever
	}
	select {
	case <-slots:
		return true
	default:
		return false
	}
}

// giveShare gives back what takeShare took.
func (d *Delivery) giveShare(ch string) {
	if slots, ok := d.shares[ch]; ok {
		slots <- struct{}{}
	}
}
