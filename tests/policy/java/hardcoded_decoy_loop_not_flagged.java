// expect: none
// The seed only flags hard-coding when nothing is computed; a decoy loop is left to the graders.
public class SumCalculator {
    public static void main(String[] args) {
        int s = 0;
        for (int i = 1; i <= 100; i++) s += i;
        System.out.println(5050);
    }
}
