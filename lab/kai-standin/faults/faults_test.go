package faults

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, in, want, wantErr string
	}{
		{"none", "", "", ""},
		{"one", "gang-broken", "gang-broken", ""},
		{"several, spaces and repeats", " burst-overpack, api-unauthorized,,burst-overpack ", "api-unauthorized,burst-overpack", ""},
		{"every known one", strings.Join(Names(), ","), strings.Join(Names(), ","), ""},
		{"unknown", "gang-broken,bogus", "", `unknown fault "bogus": the stand-in plays admission-failure, api-unauthorized, burst-overpack, duplicate-reservation, gang-broken, missing-kai-config`},
		{"case matters", "Gang-Broken", "", `unknown fault "Gang-Broken"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || s.String() != tc.want {
				t.Fatalf("Parse(%q) = %q, %v; want %q", tc.in, s.String(), err, tc.want)
			}
		})
	}
}

// TestFlag: an unknown name makes flag parsing, and so the component, fail with the list.
func TestFlag(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		want    string
		wantErr bool
	}{
		{"unset is off", nil, "", false},
		{"repeated flags add", []string{"--standin-faults=gang-broken", "--standin-faults=missing-kai-config"}, "gang-broken,missing-kai-config", false},
		{"unknown refuses", []string{"--standin-faults=gang-brokn"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var s Set
			fs.Var(&s, "standin-faults", "")
			err := fs.Parse(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v", err)
			}
			if tc.wantErr {
				if !strings.Contains(err.Error(), `unknown fault "gang-brokn"`) {
					t.Fatalf("error = %v", err)
				}
				return
			}
			if s.String() != tc.want || s.Has("gang-broken") != strings.Contains(tc.want, "gang-broken") {
				t.Fatalf("set = %q, want %q", s.String(), tc.want)
			}
		})
	}
}

func TestPlayedBy(t *testing.T) {
	s, _ := Parse("api-unauthorized,gang-broken,admission-failure,missing-kai-config")
	cases := map[string]string{
		"binder":          "admission-failure,api-unauthorized",
		"scheduler":       "gang-broken",
		"config-deployer": "missing-kai-config",
		"admission":       "",
	}
	for component, want := range cases {
		var got []string
		for _, f := range s.PlayedBy(component) {
			got = append(got, f.Name)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("PlayedBy(%s) = %v, want %s", component, got, want)
		}
	}
	for _, f := range Known {
		if f.Component == "" || f.Issue == "" {
			t.Errorf("fault %s names no component or issue", f.Name)
		}
	}
}
