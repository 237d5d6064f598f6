# A Python port of upstream Buzz's tests/bench/nbody.buzz, line for line.
import math
import sys

from buzz_std import arg, show_double

pi = 3.141592653589793
solarMass = 4.0 * pi * pi
daysPerYear = 365.24


class Body:
    def __init__(self, x, y, z, vx, vy, vz, mass):
        self.x = x
        self.y = y
        self.z = z
        self.vx = vx
        self.vy = vy
        self.vz = vz
        self.mass = mass


def advance(bodies, nbody, dt):
    for i in range(0, nbody):
        bi = bodies[i]
        bix = bi.x
        biy = bi.y
        biz = bi.z
        bimass = bi.mass
        bivx = bi.vx
        bivy = bi.vy
        bivz = bi.vz

        if i + 1 < nbody:
            for j in range(i + 1, nbody):
                bj = bodies[j]
                dx = bix - bj.x
                dy = biy - bj.y
                dz = biz - bj.z
                dist2 = dx * dx + dy * dy + dz * dz
                mag = math.sqrt(dist2)
                mag = dt / (mag * dist2)
                bm = bj.mass * mag

                bivx = bivx - (dx * bm)
                bivy = bivy - (dy * bm)
                bivz = bivz - (dz * bm)
                bm = bimass * mag
                bj.vx = bj.vx + (dx * bm)
                bj.vy = bj.vy + (dy * bm)
                bj.vz = bj.vz + (dz * bm)

        bi.vx = bivx
        bi.vy = bivy
        bi.vz = bivz
        bi.x = bix + dt * bivx
        bi.y = biy + dt * bivy
        bi.z = biz + dt * bivz


def energy(bodies, nbody):
    e = 0.0
    for i in range(0, nbody):
        bi = bodies[i]
        vx = bi.vx
        vy = bi.vy
        vz = bi.vz
        bim = bi.mass
        e = e + (0.5 * bim * (vx * vx + vy * vy + vz * vz))
        if i + 1 < nbody:
            for j in range(i + 1, nbody):
                bj = bodies[j]
                dx = bi.x - bj.x
                dy = bi.y - bj.y
                dz = bi.z - bj.z
                distance = math.sqrt(dx * dx + dy * dy + dz * dz)
                e = e - ((bim * bj.mass) / distance)

    return e


def offsetMomentum(b, nbody):
    px = 0.0
    py = 0.0
    pz = 0.0

    for i in range(0, nbody):
        bi = b[i]
        bim = bi.mass

        px = px + (bi.vx * bim)
        py = py + (bi.vy * bim)
        pz = pz + (bi.vz * bim)

    b[0].vx = -px / solarMass
    b[0].vy = -py / solarMass
    b[0].vz = -pz / solarMass


def main(args):
    sun = Body(
        x=0.0,
        y=0.0,
        z=0.0,
        vx=0.0,
        vy=0.0,
        vz=0.0,
        mass=solarMass,
    )

    jupiter = Body(
        x=4.84143144246472090,
        y=-1.16032004402742839,
        z=-0.103622044471123109,
        vx=0.00166007664274403694 * daysPerYear,
        vy=0.00769901118419740425 * daysPerYear,
        vz=-0.0000690460016972063023 * daysPerYear,
        mass=0.000954791938424326609 * solarMass,
    )

    saturn = Body(
        x=8.34336671824457987,
        y=4.12479856412430479,
        z=-0.403523417114321381,
        vx=-0.0027674251072686 * daysPerYear,
        vy=0.0049985280123492 * daysPerYear,
        vz=0.0000230417297573763929 * daysPerYear,
        mass=0.00028588598066613 * solarMass,
    )

    uranus = Body(
        x=12.894369562139,
        y=-15.111151401699,
        z=-0.22330757889266,
        vx=0.0029646013756476 * daysPerYear,
        vy=0.0023784717395948 * daysPerYear,
        vz=-0.0000296589568540237556 * daysPerYear,
        mass=0.0000436624404335156298 * solarMass,
    )

    neptune = Body(
        x=15.379697114851,
        y=-25.9193146099879641,
        z=0.179258772950371181,
        vx=0.00268067772490389322 * daysPerYear,
        vy=0.00162824170038242295 * daysPerYear,
        vz=-0.0000951592254519715870 * daysPerYear,
        mass=0.0000515138902046611451 * solarMass,
    )

    bodies = [sun, jupiter, saturn, uranus, neptune]

    N = arg(args, 0, 1000)
    nbody = len(bodies)

    offsetMomentum(bodies, nbody)
    print(f"{show_double(energy(bodies, nbody))}")

    for _ in range(0, N):
        advance(bodies, nbody, 0.01)

    print(f"{show_double(energy(bodies, nbody))}")


if __name__ == "__main__":
    main(sys.argv[1:])
