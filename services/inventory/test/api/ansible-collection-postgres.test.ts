import { ansibleSuite } from './ansible-collection-suite.ts';

ansibleSuite('postgres');
