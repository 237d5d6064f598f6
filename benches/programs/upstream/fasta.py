# A Python port of upstream Buzz's tests/bench/fasta.buzz, line for line.
# Buzz's `Buffer` is a `bytearray` here: `Buffer.init(n)` is n zero bytes (as
# magus's `buzz:buffer` makes it), `at`/`setAt` index it, `write` appends a
# string's bytes. `s.sub(p, len: n)` is `s[p:p + n]`.
import sys

from buzz_std import arg

IM = 139968.0
IA = 3877.0
IC = 29573.0
lineLength = 60
bufferSize = (lineLength + 1) * 1024


def makeRepeatFasta(id, desc, s, nchars):
    print(f">{id} {desc}")
    p = 0
    sn = len(s)
    s2 = s + s
    i = lineLength
    while i < nchars:
        print(s2[p : p + lineLength - 1])
        p = p + lineLength
        if p > sn:
            p = p - sn
        i = i + lineLength
    tail = nchars % lineLength
    if tail > 0:
        print(s2[p : p + tail - 1])


class Frequency:
    def __init__(self, chars, probs, last):
        self.chars = chars
        self.probs = probs
        self.last = last

    @staticmethod
    def init(chars, probs, last):
        freq = Frequency(
            chars=chars,
            probs=probs,
            last=last,
        )

        freq.makeCumulative()

        return freq

    def random(self, max):
        self.last = (self.last * IA + IC) % IM
        return max * self.last * (1.0 / IM)

    def makeCumulative(self):
        cp = 0.0
        for i, prob in enumerate(self.probs):
            cp = cp + prob
            self.probs[i] = cp

    def selectRandomIntoBuffer(self, buffer, initialBufferIndex, nRandom):
        len_ = len(self.probs)
        bufferIndex = initialBufferIndex

        for _ in range(0, nRandom):
            r = self.random(1.0)
            skip = False
            for i in range(0, len_):
                if r < self.probs[i]:
                    buffer[bufferIndex] = self.chars[i]
                    bufferIndex = bufferIndex + 1
                    skip = True
                    break

            if not skip:
                buffer[bufferIndex] = self.chars[len_ - 1]
                bufferIndex = bufferIndex + 1

        return bufferIndex


def makeRandomFasta(id, desc, fpf, initialNchars):
    print(f">{id} {desc}")
    nchars = initialNchars

    buffer = bytearray(bufferSize)
    bufferIndex = 0
    while nchars > 0:
        chunkSize = int(min(float(lineLength), float(nchars)))

        if bufferIndex == bufferSize:
            print(buffer.decode()[0:bufferIndex])
            buffer = bytearray(bufferSize)
            bufferIndex = 0

        bufferIndex = fpf.selectRandomIntoBuffer(
            buffer,
            bufferIndex,  # initialBufferIndex
            chunkSize,  # nRandom
        )
        buffer[bufferIndex] = 10
        bufferIndex = bufferIndex + 1

        nchars = nchars - chunkSize

    print(buffer.decode()[0:bufferIndex])


alu = (
    "GGCCGGGCGCGGTGGCTCACGCCTGTAATCCCAGCACTTTGG"
    + "GAGGCCGAGGCGGGCGGATCACCTGAGGTCAGGAGTTCGAGA"
    + "CCAGCCTGGCCAACATGGTGAAACCCCGTCTCTACTAAAAAT"
    + "ACAAAAATTAGCCGGGCGTGGTGGCGCGCGCCTGTAATCCCA"
    + "GCTACTCGGGAGGCTGAGGCAGGAGAATCGCTTGAACCCGGG"
    + "AGGCGGAGGTTGCAGTGAGCCGAGATCGCGCCACTGCACTCC"
    + "AGCCTGGGCGACAGAGCGAGACTCCGTCTCAAAAA"
)


def main(args):
    N = arg(args, 0, 1000)

    makeRepeatFasta("ONE", desc="Homo sapiens alu", s=alu, nchars=N * 2)

    iubChars = bytearray()
    iubChars += "acgtBDHKMNRSVWY".encode()
    iub = Frequency.init(
        chars=iubChars,
        probs=[
            0.27,
            0.12,
            0.12,
            0.27,
            0.02,
            0.02,
            0.02,
            0.02,
            0.02,
            0.02,
            0.02,
            0.02,
            0.02,
            0.02,
            0.02,
        ],
        last=42.0,
    )

    makeRandomFasta(
        "TWO",
        desc="IUB ambiguity codes",
        fpf=iub,
        initialNchars=N * 3,
    )

    homoSapiensChars = bytearray()
    homoSapiensChars += "acgt".encode()
    homoSapiens = Frequency.init(
        chars=homoSapiensChars,
        probs=[0.3029549426680, 0.1979883004921, 0.1975473066391, 0.3015094502008],
        last=iub.last,
    )

    makeRandomFasta(
        "THREE",
        desc="Homo sapiens frequency",
        fpf=homoSapiens,
        initialNchars=N * 5,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
