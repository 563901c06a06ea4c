export const testingPackNodes = [];
