package circulation

import "testing"

// The explorers merge worlds that differ only in the order of their actors.
// That must change how many worlds they store, and nothing they count.
func TestExploreSymmetryReductionIsExact(t *testing.T) {
	const v0 = versionMask - 1
	var cfgs []exConfig
	for _, c := range exConfigs(v0, 3, 1, 1) {
		if c.w.n <= 2 {
			cfgs = append(cfgs, c)
		}
	}
	reduced, trace1 := exploreWith(stateGo, "", exSerial(v0)-2, cfgs, false)
	plain, trace2 := exploreWith(stateGo, "", exSerial(v0)-2, cfgs, true)
	if trace1 != "" || trace2 != "" {
		t.Fatalf("violation:\n%s%s", trace1, trace2)
	}
	if reduced.interleavings != plain.interleavings || reduced.edges > plain.edges || reduced.states >= plain.states {
		t.Errorf("state protocol: reduced %+v, plain %+v", reduced, plain)
	}
	t.Logf("state protocol: %d states reduced, %d plain; %v interleavings both", reduced.states, plain.states, reduced.interleavings)

	m := slModel{delays: 2}
	scfgs := slConfigs(v0, 2, 3, m)
	sreduced, trace1 := slExploreWith(m, scfgs, false)
	splain, trace2 := slExploreWith(m, scfgs, true)
	if trace1 != "" || trace2 != "" {
		t.Fatalf("violation:\n%s%s", trace1, trace2)
	}
	if sreduced.interleavings != splain.interleavings || sreduced.states >= splain.states {
		t.Errorf("slot protocol: reduced %+v, plain %+v", sreduced, splain)
	}
	t.Logf("slot protocol: %d states reduced, %d plain; %v interleavings both", sreduced.states, splain.states, sreduced.interleavings)
}
