package validate

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDurationFix(t *testing.T) {
	for in, want := range map[string]string{"7d": "168h", "1d12h": "36h", "2w": "336h", "1.5d": "36h", "1d30m": "24h30m", "0d": "0s", "7x": ""} {
		require.Equal(t, want, durationFix(in), in)
	}
}

func TestQuantityFix(t *testing.T) {
	for in, want := range map[string]string{"64GB": "64G", "64GiB": "64Gi", "800 gi": "800Gi", "512mb": "512M", "1kb": "1k", "lots": ""} {
		require.Equal(t, want, quantityFix(in), in)
	}
}

func TestImageFix(t *testing.T) {
	for in, want := range map[string]string{"Busybox": "busybox", "ghcr.io/Org/Image:V1": "ghcr.io/org/image:V1", " busybox ": "busybox", "localhost:5000/My:Tag": "localhost:5000/my:Tag"} {
		require.Equal(t, want, imageFix(in), in)
	}
}

func TestJobNameFix(t *testing.T) {
	for in, want := range map[string]string{
		"My_Job":  "my-job",
		"1my-job": "job-1my-job",
		"-job-":   "job",
		"a-job-name-that-is-much-longer-than-fifty-characters":  "a-job-name-that-is-much-longer-than-fifty-characte",
		"a-job-name-that-is-much-longer-than-fifty-character-s": "a-job-name-that-is-much-longer-than-fifty-characte",
		"a-job-name-that-is-much-longer-than-fifty-charact--s":  "a-job-name-that-is-much-longer-than-fifty-charact",
		"___": "",
	} {
		require.Equal(t, want, jobNameFix(in, 50), in)
	}
}

func TestJobNameProblems(t *testing.T) {
	for in, want := range map[string]string{
		"1st-job": "it starts with a digit, not a letter",
		"-job":    `it starts with "-", not a letter`,
		"job-":    `it ends with "-", not a letter or digit`,
		"my.job":  `it holds ".", but only lowercase letters, digits and '-' are allowed`,
		"My Job":  `it holds capital letters and " ", but only lowercase letters, digits and '-' are allowed`,
		"my-job-is-ten-characters-longer-than-the-limit-of-fifty": "it is 55 characters long, more than 50",
		"":       "",
		"my-job": "",
	} {
		require.Equal(t, want, jobNameProblems(in, 50), in)
	}
}

func TestMemoryUnitFix(t *testing.T) {
	for in, want := range map[string]string{"16": "16Gi", "1024": "1024Mi", "1048576": "", "17179869184": "", "0": ""} {
		require.Equal(t, want, memoryUnitFix(json.Number(in)), in)
	}
	require.Empty(t, memoryUnitFix("16"))
}

func TestMilliCPUFix(t *testing.T) {
	for in, want := range map[string]string{"0.5": "500m", "1.25": "1250m", "0.001": "1m", "2.5e-1": "250m", "0.0005": "", "2": "", "-0.5": "", "0": ""} {
		require.Equal(t, want, milliCPUFix(json.Number(in)), in)
	}
	require.Empty(t, milliCPUFix("0.5"))
}
