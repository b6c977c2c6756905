#!/usr/bin/env python3
# status and status --resources at 1,000 services: pkitctl wall median and pkitd CPU per
# request (utime+stime delta over 20 requests, clock-tick resolution). Prints figures
# only; never fails on timing. Usage: bench_status_resources.py (PKITD/PKITCTL from the
# environment, default ./build).
import os, subprocess, time, tempfile, statistics, sys
PKITD=os.environ.get("PKITD", "build/daemon/pkitd"); CTL=os.environ.get("PKITCTL", "build/ctl/pkitctl")
d=tempfile.mkdtemp(prefix="statres-"); os.makedirs(d+"/services")
for i in range(1000):
    open(f"{d}/services/s{i:04d}.toml","w").write('command = ["sleep", "1000"]\n')
sock=d+"/s.sock"
p=subprocess.Popen([PKITD,"--config",d,"--socket",sock],stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL)
def cpu():
    f=open(f"/proc/{p.pid}/stat").read().rsplit(")",1)[1].split()
    return (int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK")
deadline=time.time()+60
while time.time()<deadline:
    r=subprocess.run([CTL,"--socket",sock,"status"],capture_output=True,text=True)
    if r.returncode==0 and r.stdout.count(" running ")>=1000: break
    time.sleep(0.5)
for args,label in (([],"status"),(["--resources"],"status --resources")):
    walls=[]; c0=cpu(); n=20
    for _ in range(n):
        t=time.monotonic(); subprocess.run([CTL,"--socket",sock,"status"]+args,stdout=subprocess.DEVNULL); walls.append((time.monotonic()-t)*1000)
    print(f"{label}: pkitctl wall median {statistics.median(walls):.1f} ms, pkitd CPU per request {(cpu()-c0)/n*1000:.1f} ms (clock-tick resolution, {n} requests)")
subprocess.run([CTL,"--socket",sock,"shutdown"],stdout=subprocess.DEVNULL); p.wait()
import shutil
shutil.rmtree(d, ignore_errors=True)
