package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kaiops.dev/lab/kai-standin/faults"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []string
		wantErr bool
	}{
		{"one", "apiVersion: kai.scheduler/v1\nkind: Config\nmetadata: {name: kai-config}\n", []string{"Config/kai-config"}, false},
		{"empty documents skipped", "---\n# c\n---\nkind: A\nmetadata: {name: a}\n---\nkind: B\nmetadata: {name: b}\n", []string{"A/a", "B/b"}, false},
		{"no name", "kind: A\nmetadata: {}\n", nil, true},
		{"not yaml", "kind: [\n", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode(strings.NewReader(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// A ConfigMap volume: keys are links into a hidden ..data folder, which is skipped.
func TestReadManifestsConfigMapVolume(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "..data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"b.yaml": "kind: B\nmetadata: {name: b}\n", "a.yaml": "kind: A\nmetadata: {name: a}\n", "notes.txt": "x"} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	objs, err := ReadManifests([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetName() != "a" || objs[1].GetName() != "b" {
		t.Fatalf("objects %v", objs)
	}
}

// TestDeployedMissingKaiConfig: the hook applies Config kai-config unless the
// missing-kai-config fault is on; another fault, or another object, changes nothing.
func TestDeployedMissingKaiConfig(t *testing.T) {
	manifest := "apiVersion: kai.scheduler/v1\nkind: Config\nmetadata: {name: kai-config}\n---\n" +
		"apiVersion: kai.scheduler/v1\nkind: Config\nmetadata: {name: other}\n---\n" +
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kai-config, namespace: x}\n"
	cases := []struct {
		name   string
		faults string
		want   string
		logged int
	}{
		{"healthy: everything", "", "Config/kai-config,Config/other,ConfigMap/kai-config", 0},
		{"another component's fault", "gang-broken,api-unauthorized", "Config/kai-config,Config/other,ConfigMap/kai-config", 0},
		{"missing-kai-config: not Config kai-config", "missing-kai-config", "Config/other,ConfigMap/kai-config", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode(strings.NewReader(manifest))
			if err != nil {
				t.Fatal(err)
			}
			on, err := faults.Parse(tc.faults)
			if err != nil {
				t.Fatal(err)
			}
			logged := 0
			var got []string
			for _, o := range Deployed(objs, on, func(string, ...any) { logged++ }) {
				got = append(got, o.GetKind()+"/"+o.GetName())
			}
			if strings.Join(got, ",") != tc.want || logged != tc.logged {
				t.Fatalf("applied %v (%d logged), want %s (%d)", got, logged, tc.want, tc.logged)
			}
		})
	}
}
