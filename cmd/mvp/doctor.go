package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"

	"github.com/mvp2/mvp/internal/cli"
	"github.com/mvp2/mvp/internal/doctor"
	"github.com/mvp2/mvp/internal/gpu"
	"github.com/mvp2/mvp/internal/ray"
)

// gpusEnv is the configured GPU count per worker that the doctor falls back on without NVML (the same variable
// scripts/ray-up.sh reads).
const gpusEnv = "RAY_GPUS_PER_WORKER"

// runDoctor parses doctor's flags and runs it; with --num-gpus it prints only the GPU count a worker should start
// with (for v2/scripts/worker.sh).
func runDoctor(ctx context.Context, args []string) error { return doctorTo(ctx, args, os.Stderr) }

// doctorTo is runDoctor with its usage (-h) and flag errors written to stderr.
func doctorTo(ctx context.Context, args []string, stderr io.Writer) error {
	flags := flag.NewFlagSet("doctor", flag.ContinueOnError)
	cfgPath := flags.String("config", "configs/dev.yaml", "the cluster's dev.yaml (its address is Ray's Job server)")
	gpus := flags.String("gpus", "", "GPU count of this node when NVML is missing, or fails (default $"+gpusEnv+", which covers a missing NVML only)")
	nodeIP := flags.String("node-ip", "", "this node's address as Ray knows it (default: every address of this machine)")
	numGPUs := flags.Bool("num-gpus", false, "print only the GPU count to start a Ray worker with (NVML, else --gpus / $"+gpusEnv+")")
	out := flags.String("o", "text", "output: text or json")
	cli.SetUsage(flags, stderr, "doctor")
	if err := flags.Parse(args); err != nil {
		return cli.FlagError(err) // said, with the usage, by the flag package
	}
	if *out != "text" && *out != "json" { // before any check asks Ray
		return cli.Usage(fmt.Errorf("-o %q: use text or json", *out))
	}
	o := doctor.Options{NVML: gpu.System()}
	if *gpus != "" {
		o.ConfiguredFrom = "--gpus"
	} else if v := os.Getenv(gpusEnv); v != "" {
		*gpus, o.ConfiguredFrom = v, gpusEnv
	}
	if o.ConfiguredFrom != "" {
		n, err := strconv.Atoi(*gpus)
		if err != nil || n < 0 {
			err := fmt.Errorf("%s: %q is not a GPU count (a whole number ≥ 0)", o.ConfiguredFrom, *gpus)
			if o.ConfiguredFrom == "--gpus" {
				return cli.Usage(err) // a mistake in the command (the variable's is the environment's: exit 1)
			}
			return err
		}
		o.ConfiguredGPUs = n
	}
	if *numGPUs {
		n, _, err := doctor.GPUCount(o)
		if err != nil {
			return err
		}
		fmt.Println(n)
		return nil
	}
	cfg, err := cli.LoadConfig(*cfgPath)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings { // on stderr: -o json's output stays JSON
		fmt.Fprintf(os.Stderr, "mvp doctor: warning: config %s: %s\n", *cfgPath, w)
	}
	o.Ray = ray.New(ray.Options{DashboardURL: cfg.Address, Token: os.Getenv(cfg.V2.Ray.TokenEnv), Timeout: cfg.V2.Ray.RequestTimeout()})
	o.RayAddress, o.SharedRoot = cfg.Address, cfg.SharedRoot
	if *nodeIP != "" {
		o.NodeIPs = []string{*nodeIP}
	} else if o.NodeIPs, err = localIPs(); err != nil {
		return err
	}
	r := doctor.Run(ctx, o)
	switch *out {
	case "json":
		b, _ := json.MarshalIndent(r, "", "  ")
		fmt.Println(string(b))
	case "text":
		r.Write(os.Stdout)
	}
	if !r.OK() {
		return errors.New("some checks failed (see above)")
	}
	return nil
}

// localIPs are this machine's addresses.
func localIPs() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list this machine's addresses: %w", err)
	}
	var ips []string
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			ips = append(ips, n.IP.String())
		}
	}
	return ips, nil
}
