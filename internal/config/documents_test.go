package config_test

import (
	"strings"
	"testing"

	"github.com/procsvc/procsvc/graph/gqlhttp"
)

// TestDocumentCacheSettings: --document-cache-mb and
// --document-cache-workspace-mb default to gqlhttp's defaults, are read
// from PROCSVC_DOCUMENT_CACHE_MB and PROCSVC_DOCUMENT_CACHE_WORKSPACE_MB
// (the flag wins), and are refused out of range (the share above the
// ceiling included) with a message naming the setting.
func TestDocumentCacheSettings(t *testing.T) {
	c, err := loadServe(nil, nil)
	if err != nil || int64(c.DocumentCacheMB)<<20 != gqlhttp.DefaultDocumentCacheBytes ||
		int64(c.DocumentCacheWorkspaceMB)<<20 != gqlhttp.DefaultDocumentCacheWorkspaceBytes {
		t.Fatalf("defaults: %d MB, %d MB per workspace (%v)", c.DocumentCacheMB, c.DocumentCacheWorkspaceMB, err)
	}
	for _, tc := range []struct {
		name           string
		args           []string
		env            map[string]string
		ceiling, share int
	}{
		{"flags", []string{"--document-cache-mb", "64", "--document-cache-workspace-mb", "8"}, nil, 64, 8},
		{"environment", nil, map[string]string{"PROCSVC_DOCUMENT_CACHE_MB": "32", "PROCSVC_DOCUMENT_CACHE_WORKSPACE_MB": "4"}, 32, 4},
		{"flag wins", []string{"--document-cache-mb", "8"}, map[string]string{"PROCSVC_DOCUMENT_CACHE_MB": "32"}, 8, 2},
		{"one share is the whole cache", []string{"--document-cache-mb", "1", "--document-cache-workspace-mb", "1"}, nil, 1, 1},
		{"largest", []string{"--document-cache-mb", "4096", "--document-cache-workspace-mb", "4096"}, nil, 4096, 4096},
	} {
		c, err := loadServe(tc.args, tc.env)
		if err != nil || c.DocumentCacheMB != tc.ceiling || c.DocumentCacheWorkspaceMB != tc.share {
			t.Errorf("%s: %d, %d, %v; want %d, %d", tc.name, c.DocumentCacheMB, c.DocumentCacheWorkspaceMB, err, tc.ceiling, tc.share)
		}
	}
	for _, tc := range []struct {
		args  []string
		names string
	}{
		{[]string{"--document-cache-mb", "0"}, "--document-cache-mb"},
		{[]string{"--document-cache-mb", "4097"}, "--document-cache-mb"},
		{[]string{"--document-cache-workspace-mb", "0"}, "--document-cache-workspace-mb"},
		{[]string{"--document-cache-workspace-mb", "17"}, "--document-cache-workspace-mb"},
		{[]string{"--document-cache-mb", "4", "--document-cache-workspace-mb", "8"}, "--document-cache-workspace-mb"},
	} {
		if _, err := loadServe(tc.args, nil); err == nil || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%v: %v, want a refusal naming %s", tc.args, err, tc.names)
		}
	}
}
