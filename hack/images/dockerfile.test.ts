// Reading a Dockerfile the way BuildKit does, for the instructions the operator image uses.
import { describe, expect, it } from 'vitest';
import { applyStage, dockerignore, parseDockerfile, shellWords } from './dockerfile.ts';

const TEXT = `# syntax=docker/dockerfile:1
FROM example/build:1 AS deps
WORKDIR /src
RUN make \\
 # a comment inside a continuation
 && make install

FROM example/base:2
ARG VERSION=0.0.0-dev
LABEL a="one two" \\
      b=\${VERSION}
WORKDIR /app
WORKDIR sub
ENV PATH=/opt/bin HOME=/home/x
USER 65532:65532
EXPOSE 8080 53/udp
COPY --from=deps /src/out ./out/
COPY a.json b.json ./
ENTRYPOINT ["/bin/app", "--flag"]
`;

describe('parseDockerfile / applyStage', () => {
  const [deps, final] = parseDockerfile(TEXT);
  const base = { Env: ['PATH=/usr/bin', 'TZ=UTC'], Cmd: ['--help'], WorkingDir: '/' };

  it('reads stages with their names, joining continuation lines and dropping comments', () => {
    expect([deps?.name, deps?.base, final?.base]).toEqual(['deps', 'example/build:1', 'example/base:2']);
    expect(applyStage(deps!, {}).runs.map((r) => r.args)).toEqual(['make \n && make install']);
  });

  it('applies ARG, LABEL, WORKDIR, ENV, USER, EXPOSE and ENTRYPOINT on top of the base', () => {
    const { config } = applyStage(final!, base, { VERSION: '1.2.3' });
    expect(config).toEqual({
      Labels: { a: 'one two', b: '1.2.3' },
      WorkingDir: '/app/sub',
      // PATH replaced where the base had it, HOME added after
      Env: ['PATH=/opt/bin', 'TZ=UTC', 'HOME=/home/x'],
      User: '65532:65532',
      ExposedPorts: { '8080/tcp': {}, '53/udp': {} },
      // ENTRYPOINT clears the base's CMD
      Entrypoint: ['/bin/app', '--flag'],
    });
    expect(applyStage(final!, base).config.Labels?.b).toBe('0.0.0-dev');
  });

  it('resolves COPY destinations against the WORKDIR of the moment', () => {
    expect(applyStage(final!, base).copies).toEqual([
      { from: 'deps', sources: ['/src/out'], dest: '/app/sub/out', intoDir: true, line: 17 },
      { sources: ['a.json', 'b.json'], dest: '/app/sub', intoDir: true, line: 18 },
    ]);
  });

  it('refuses an instruction it does not model, naming the line', () => {
    const [stage] = parseDockerfile('FROM x\nVOLUME /data\n');
    expect(() => applyStage(stage!, {})).toThrow(/line 2: VOLUME is not modelled/);
    expect(() => parseDockerfile('RUN true\n')).toThrow(/RUN before FROM/);
  });

  it('splits words with quotes and escapes', () => {
    expect(shellWords(`a="b c" 'd e' f\\ g`)).toEqual(['a=b c', 'd e', 'f g']);
    expect(() => shellWords('a="b')).toThrow(/unterminated/);
  });
});

describe('dockerignore', () => {
  const ignored = dockerignore('*\n!package.json\n!operator/\noperator/**/*.test.ts\n');

  it('lets the last matching pattern decide, for a path or any of its parents', () => {
    expect(ignored('package.json')).toBe(false);
    expect(ignored('package-lock.json')).toBe(true);
    expect(ignored('hack/images/build.ts')).toBe(true);
    expect(ignored('operator/src/main.ts')).toBe(false);
    expect(ignored('operator/src/main.test.ts')).toBe(true);
    expect(ignored('operator/x.test.ts')).toBe(true);
  });
});
